"""What changed between two readings of a ledger (built by hand): the chronic set by mode, the
items that joined it and those fixed since, as the report, the CLI and the digest read it; and
the digest's Slack message keeps item ids from formatting or mentioning anyone."""

from __future__ import annotations

import datetime as dt

from omni_tasks.alerts.blocks import digest_message, render_text
from omni_tasks.ledger.digest import by_mode, commit_range, digest, headline, rate
from omni_tasks.ledger.model import Ledger, LedgerItem

D = dt.date(2026, 12, 1)


def item(utt: str, state: str, mode: str | None = "answered", **kw) -> LedgerItem:
    return LedgerItem(
        utt_id=utt,
        state=state,
        broken=kw.pop("broken", 12),
        nights=14,
        low=0.6,
        high=0.98,
        first_broken=D - dt.timedelta(days=13),
        last_broken=D,
        mode=mode,
        origin="talker",
        leak_share=0.0,
        **kw,
    )


def ledger(night: dt.date, *items: LedgerItem) -> Ledger:
    return Ledger("b|m|l", "b", "main", night - dt.timedelta(days=13), night, items)


def test_joined_and_fixed_are_what_changed_since_the_earlier_reading() -> None:
    week_ago = ledger(
        D - dt.timedelta(days=7),
        item("q1", "chronic"),
        item("q2", "chronic", "over_generation"),
        item("q3", "flaky", broken=3),
    )
    now = ledger(
        D,
        item("q1", "chronic"),
        item("q2", "fixed", "over_generation", commit_range=("a" * 40, "b" * 40)),
        item("q3", "new", since=D - dt.timedelta(days=2)),
        item("q4", "chronic", None),
        item("q5", "flaky", broken=4),
    )
    d = digest(now, week_ago)
    assert [i.utt_id for i in d.chronic] == ["q1", "q3", "q4"]
    assert [i.utt_id for i in d.joined] == ["q3", "q4"]  # q1 was chronic a week ago
    assert [i.utt_id for i in d.fixed] == ["q2"]
    assert d.by_mode == {"answered": 2, "unknown": 1}
    assert d.since == D - dt.timedelta(days=7) and d.flaky == 1
    assert commit_range(d.fixed[0]) == "aaaaaaaaaaaa..bbbbbbbbbbbb"
    assert (
        headline(d)
        == "3 chronic (2 answered, 1 unknown), 1 flaky; since 2026-11-24: 2 joined, 1 fixed"
    )
    # A second fixed reading says nothing new; without an earlier one everything is news.
    assert digest(now, now).joined == () and digest(now, now).fixed == ()
    first = digest(now, None)
    assert len(first.joined) == 3 and len(first.fixed) == 1 and first.since is None


def test_rate_carries_its_count_and_interval() -> None:
    assert rate(item("q1", "chronic")) == "12/14 (86 % [60 %, 98 %])"
    assert by_mode(
        [item("a", "chronic", "x"), item("b", "chronic", "y"), item("c", "new", "y")]
    ) == {
        "y": 2,
        "x": 1,
    }


def test_the_digest_message_escapes_item_ids_and_says_what_was_left_out() -> None:
    lines = [f"<!channel> *item{n}*" for n in range(20)]
    m = digest_message("Standing failures · b", [("20 new chronic items", lines), ("Fixed: 0", [])])
    text = render_text(m.to_payload())
    assert "<!channel>" not in str(m.to_payload())  # no mention can come from the data
    assert "… and 5 more" in text and "item14" in text and "item15" not in text
    assert "Fixed: 0" in text
