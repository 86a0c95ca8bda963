"""What an alert group's and a regression alert's text say holds together: no invented last
good night, no `?..` range, a member moved into a group's thread names the group, headers
within Slack's 150 characters cut at a word with the verdict and the update kept, and the lane
never read as the variant."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from omni_tasks.alerts import blocks, titles
from omni_tasks.alerts.blocks import AlertContext
from omni_tasks.alerts.messages import group_view
from omni_tasks.contracts import AlertDetails, StoredAlert
from omni_tasks.contracts.night import GroupMemberRow
from omni_tasks.series import Series

QWEN = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
LONG_LANE = "cuda-h100x8-nvlink-sxm5-fp8-eager"
D = dt.date(2026, 12, 5)


def _alert(alert_id: int, key: str, **kw: Any) -> StoredAlert:
    row = StoredAlert(
        alert_id=alert_id,
        alert_key=key,
        kind="regression",
        state="open",
        opened_nightly=D,
        last_nightly=D,
        resolved_nightly=None,
        channel=None,
        parent_ts=None,
        details=AlertDetails(),
        created_at=dt.datetime(2026, 12, 5, tzinfo=dt.UTC),
        group_id=None,
        range_from=None,
        range_to=None,
        hold_until=None,
        thread_ts=None,
    )
    return dataclasses.replace(row, **kw)


def _member(
    alert_id: int, series: Series, last_good: str | None, range_from: dt.date
) -> GroupMemberRow:
    details = AlertDetails(summary="Δ +9.3 pts", last_good=last_good, first_bad="f00dbeef" * 5)
    alert = _alert(
        alert_id,
        f"{series.key}|rebase|main|default|tail_fraction@0.5",
        details=details,
        group_id=1,
        range_from=range_from,
        range_to=D,
    )
    return GroupMemberRow(alert, series, "rebase", "main")


def _group(members: list[GroupMemberRow]) -> str:
    group = _alert(
        1,
        f"group|rebase|main|{D}",
        kind="group",
        range_from=min(m.alert.range_from for m in members),
        range_to=D,
    )
    view = group_view(group, members)
    payload = blocks.group_parent(view).to_payload()
    return blocks.render_text(payload)


def test_a_group_without_a_known_good_night_says_so_and_invents_none() -> None:
    """The member's stored range starts a day before its first bad night only to bound the
    overlap of ranges: the parent never names that day as a last good night."""
    text = _group(
        [_member(2, Series("seed_tts_en", QWEN, "cuda-h100x2"), None, D - dt.timedelta(1))]
    )
    assert "?.." not in text
    assert "2026-12-04" not in text
    assert "up to f00dbee (no earlier good night)" in text
    assert "rebase vs main: no earlier good night → first bad night 2026-12-05" in text


def test_a_group_with_a_good_night_names_it_and_its_commit() -> None:
    good = "c0ffee00" * 5
    members = [
        _member(2, Series("seed_tts_en", QWEN, "cuda-h100x2"), good, dt.date(2026, 12, 3)),
        _member(3, Series("seed_tts_en", QWEN, "rocm-mi300"), None, D - dt.timedelta(1)),
    ]
    text = _group(members)
    assert "c0ffee0..f00dbee" in text
    assert "last good night 2026-12-03 → first bad night 2026-12-05" in text


def _ctx(**kw: Any) -> AlertContext:
    ctx = AlertContext(
        series=Series("seed_tts_en", QWEN, "default"),
        nightly="2026-12-05",
        candidate="rebase",
        baseline="main",
        variant="default",
        verdict="REGRESSED",
        confirmed=True,
        tau=0.5,
        comparison=None,
        alert_id=7,
        next_steps=("omni-tasks alerts ack 7 --note '…'",),
    )
    return dataclasses.replace(ctx, **kw)


def _header(msg: blocks.Message) -> str:
    head = msg.to_payload()["blocks"][0]
    assert head["type"] == "header"
    return str(head["text"]["text"])


def test_a_member_queued_before_its_group_formed_names_the_group_in_its_thread() -> None:
    queued = blocks.regression_opened(_ctx()).to_payload()
    assert "(group" not in blocks.render_text(queued)
    moved = blocks.in_group(queued, 7, 12)
    expected = blocks.regression_opened(_ctx(group_id=12)).to_payload()
    assert moved == expected
    assert "Next: *Alert 7* (group 12) · `omni-tasks alerts ack 7" in blocks.render_text(moved)
    assert blocks.in_group(moved, 7, 12) == moved  # named once


def test_the_lane_and_the_variant_are_named_apart() -> None:
    head = blocks.headline(_ctx())
    assert head.startswith(
        "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · lane default: rebase vs main REGRESSED"
    )
    other = blocks.headline(_ctx(variant="realtime"))
    assert "· lane default: rebase vs main (variant realtime) REGRESSED" in other


def test_a_long_header_shortens_names_first_and_keeps_the_verdict_and_update() -> None:
    since = " (open since 2026-11-20, 16 nights)"
    ctx = _ctx(series=Series("seed_tts_en", QWEN, LONG_LANE), variant="reference-as-input")
    full = ":rotating_light: " + blocks.headline(ctx) + since
    assert len(full) > 150  # the case this test is for
    head = _header(blocks.regression_parent(ctx, "2026-11-20", 16))
    assert len(head) <= 150
    assert head.endswith("REGRESSED, confirmed — 2026-12-05 (open since 2026-11-20, 16 nights)")
    assert "Qwen3-Omni-30B…" in head  # the model gave way first, cut at a word
    # the notification text keeps the whole title
    assert blocks.regression_parent(ctx, "2026-11-20", 16).text == full


def test_long_branches_are_cut_at_a_word_after_the_names() -> None:
    branch = "rebase-onto-upstream-v0.11.2-with-the-cudagraph-and-talker-batching-fixes"
    ctx = _ctx(series=Series("seed_tts_en", QWEN, LONG_LANE), candidate=branch, baseline=branch)
    head = _header(blocks.regression_parent(ctx, "2026-11-20", 16))
    assert len(head) <= 150
    assert head.endswith("… REGRESSED, confirmed — 2026-12-05 (open since 2026-11-20, 16 nights)")
    assert "lane cuda-h100x8…" in head  # the lane was shortened before the branches were cut
    cut = head.split("…")[-2]
    assert branch.startswith(cut.split(": ", 1)[1].rstrip("-"))  # the branch cut whole words


def test_every_title_shape_fits_at_a_word() -> None:
    ctx = _ctx(series=Series("seed_tts_en", QWEN, LONG_LANE), candidate="rebase-" * 12)
    for msg in (
        blocks.regression_resolved_parent(ctx, "2026-11-20"),
        blocks.regression_withdrawn_parent(ctx, "2026-11-20"),
    ):
        head = _header(msg)
        assert len(head) <= 150 and head.endswith(("2026-11-20", "no longer confirmed"))
    assert titles.clip_words("alpha beta gamma", 12) == "alpha beta…"
    assert titles.clip_words("x" * 40, 10) == "x" * 9 + "…"  # one token: cut where it must
