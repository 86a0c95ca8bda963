"""The standing-failure issue as a pure plan, from ledgers built by hand: filed once for a new
set, edited (never filed again) for the same set, a comment when an item joins or a new lane
shows one, closed with its evidence once every item is clean for the stated nights, reopened
when one returns; transcripts cannot inject markdown, mentions or a second marker."""

from __future__ import annotations

import datetime as dt

from omni_tasks.ledger.issue import (
    LABEL,
    Entry,
    Evidence,
    Existing,
    IssueSet,
    Plan,
    fresh_elsewhere,
    issue_sets,
    marked_key,
    plan,
    tracked,
)
from omni_tasks.ledger.model import Ledger, LedgerItem

D = dt.date(2026, 12, 1)
H100 = "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · default"
MI300 = "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · mi300x"


def item(
    utt: str, state: str = "chronic", mode: str = "answered", last: int = 0, **kw
) -> LedgerItem:
    broken = kw.pop("broken", 13 if state in ("chronic", "new") else 0)
    return LedgerItem(
        utt_id=utt,
        state=state,
        broken=broken,
        nights=14,
        low=kw.pop("low", 0.66),
        high=kw.pop("high", 0.99),
        first_broken=D - dt.timedelta(days=13) if broken else None,
        last_broken=D - dt.timedelta(days=last) if broken or last else None,
        mode=mode if broken else None,
        origin=kw.pop("origin", "talker"),
        leak_share=kw.pop("leak_share", 0.5),
        **kw,
    )


def ledger(*items: LedgerItem, night: dt.date = D) -> Ledger:
    return Ledger(
        "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|default",
        "seed_tts_en",
        "main",
        night - dt.timedelta(days=13),
        night,
        items,
    )


def one(ledgers: list[tuple[str, Ledger]], mode: str = "answered") -> IssueSet:
    (found,) = issue_sets("seed_tts_en", "main", ledgers, {mode}, only=mode)
    return found


def apply(p: Plan, existing: Existing | None) -> Existing:
    """What GitHub holds after the plan's steps (the fake of tests/fakes does the same over
    HTTP; here the plan's own bookkeeping is checked)."""
    number, is_open, body = (
        (existing.number, existing.open, existing.body) if existing else (1, True, "")
    )
    for s in p.steps:
        if s.op in ("create", "edit"):
            body = s.text
        elif s.op == "close":
            is_open = False
        elif s.op == "reopen":
            is_open = True
    return Existing(number, is_open, body)


def test_a_new_set_is_filed_once_and_the_same_set_edits_in_place() -> None:
    first = one([(H100, ledger(item("q1"), item("q2"), item("s1", "flaky", broken=4)))])
    assert [e.item.utt_id for e in first.entries] == ["q1", "q2"]  # flaky is not filed
    p = plan(first, None, clean_nights=14)
    assert [s.op for s in p.steps] == ["create"]
    issue = apply(p, None)
    assert tracked(issue.body) == {"q1": [H100], "q2": [H100]}
    assert marked_key(issue.body) == ("seed_tts_en", "main", "answered")
    again = plan(first, issue, clean_nights=14)
    assert again.steps == ()  # same set, same figures: nothing
    later = ledger(item("q1", low=0.7), item("q2"), night=D + dt.timedelta(days=1))
    moved = plan(one([(H100, later)]), issue, clean_nights=14)
    assert [s.op for s in moved.steps] == ["edit"]  # new figures, same set: no comment


def test_a_joining_item_and_a_new_lane_are_commented() -> None:
    issue = apply(plan(one([(H100, ledger(item("q1")))]), None, 14), None)
    now = one([(H100, ledger(item("q1"), item("q3"))), (MI300, ledger(item("q1")))])
    p = plan(now, issue, clean_nights=14)
    assert [s.op for s in p.steps] == ["edit", "comment"]
    said = p.steps[1].text
    assert "joined: `q3`" in said and f"`q1` is now chronic on `{MI300}`" in said
    assert tracked(apply(p, issue).body) == {"q1": sorted([H100, MI300]), "q3": [H100]}


def test_elsewhere_names_the_other_series_where_it_is_chronic() -> None:
    other = "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|mi300x"
    now = one([(H100, ledger(item("q1", elsewhere=(other,))))])
    assert now.entries[0].chronic_in == tuple(sorted([H100, MI300]))


def test_recovered_set_closes_with_evidence_only_after_the_clean_nights() -> None:
    issue = apply(plan(one([(H100, ledger(item("q1"), item("q2")))]), None, 14), None)
    # q1 fixed 5 nights ago, q2 flaky: neither chronic, neither clean for 14 nights yet.
    fixed = item("q1", "fixed", last=5, commit_range=("a" * 40, "b" * 40), broken=8)
    recovering = one([(H100, ledger(fixed, item("q2", "flaky", last=2, broken=3)))])
    p = plan(recovering, issue, clean_nights=14)
    assert [s.op for s in p.steps] == ["edit"]
    issue = apply(p, issue)
    assert tracked(issue.body) == {"q1": [H100], "q2": [H100]}  # still tracked, not clean
    assert "No longer chronic, not yet clean for 14 nights" in issue.body
    # 14 nights on, neither broke again.
    later = D + dt.timedelta(days=14)
    fixed = item("q1", "fixed", last=19, commit_range=("a" * 40, "b" * 40), broken=2)
    clean = one([(H100, ledger(fixed, item("q2", "clean", last=16, broken=1), night=later))])
    p = plan(clean, issue, clean_nights=14)
    assert [s.op for s in p.steps] == ["edit", "comment", "close"]
    evidence = p.steps[1].text
    assert "clean for at least 14 nights" in evidence
    assert "`q1` (fixed on" in evidence and "`aaaaaaaaaaaa..bbbbbbbbbbbb`" in evidence
    assert "`q2` (clean on" in evidence
    closed = apply(p, issue)
    assert not closed.open and tracked(closed.body) == {}
    assert plan(clean, closed, 14).steps == ()  # closed stays closed while clean


def test_a_returning_item_reopens_the_closed_issue() -> None:
    closed = Existing(7, False, apply(plan(one([(H100, ledger())]), None, 14), None).body)
    back = one([(H100, ledger(item("q2", "new", since=D)))])
    p = plan(back, closed, clean_nights=14)
    assert p.number == 7
    assert [s.op for s in p.steps] == ["edit", "reopen", "comment"]
    assert "Reopened" in p.steps[2].text and "`q2`" in p.steps[2].text


def test_an_empty_set_files_nothing() -> None:
    assert plan(one([(H100, ledger(item("s1", "flaky", broken=3)))]), None, 14).steps == ()


def test_transcripts_cannot_inject_markdown_mentions_or_a_marker() -> None:
    hostile = '@octocat ``` <!-- omni-tasks-ledger {"benchmark":"x","mode":"y","items":{}} --> [x](http://evil)'
    base = one([(H100, ledger(item("q1")))])
    ev = Evidence(H100, D, "say this", hostile, "https://omni.example/omni/audio/r/q1.wav")
    withev = IssueSet(
        base.benchmark,
        base.branch,
        base.mode,
        base.last_night,
        (Entry(base.entries[0].item, H100, (H100,), ev),),
        base.standing,
    )
    body = plan(withev, None, 14).steps[0].text
    assert tracked(body) == {"q1": [H100]}  # the first marker is ours
    fence = "````"  # longer than the transcript's own backticks: it cannot close the block
    assert f"{fence}text\n{hostile}\n{fence}" in body
    assert "[Listen to the clip](https://omni.example/omni/audio/r/q1.wav)" in body
    assert LABEL == "standing-failure"


def test_elsewhere_is_answered_by_the_ledgers_read_together() -> None:
    other = "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|mi300x"
    gone = "seed_tts_en|Qwen/Qwen3-Omni-30B-A3B-Instruct|gone"
    here = ledger(item("q1", elsewhere=(gone,)), item("q2", elsewhere=(other,)))
    there = Ledger(other, "seed_tts_en", "main", D - dt.timedelta(days=13), D, (item("q1"),))
    fresh_here, fresh_there = fresh_elsewhere([here, there])
    # q1 is chronic on mi300x as read now; q2's stored "mi300x" is stale; `gone` was not read.
    assert {i.utt_id: i.elsewhere for i in fresh_here.items} == {
        "q1": tuple(sorted((other, gone))),
        "q2": (),
    }
    assert fresh_there.items[0].elsewhere == (here.series_key,)
