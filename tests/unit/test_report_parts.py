"""The report's per-clip scatter: clips on the same capped WER spread out (by a fixed nudge
from their id, so the same clip sits in the same place), with the diagonal drawn; reproduce
commands wrap; the failure-mode bars put the baseline first."""

from __future__ import annotations

from omni_tasks.reports.html import CSS, jitter, modes_figure, scatter_figure
from omni_tasks.store.views import ModeCount, PairedWer


def clip(utt: str, base: float | None, cand: float | None) -> PairedWer:
    return PairedWer(utt, base, cand, "r")


def test_clips_on_one_value_spread_out_and_stay_put() -> None:
    clips = [clip(f"u{i}", 0.0, 1.0) for i in range(23)]  # 23 regressed clips, one dot before
    fig = scatter_figure(clips, "main", "rebase")
    xs, ys = list(fig.data[0].x), list(fig.data[0].y)
    assert len({round(x, 6) for x in xs}) == 23 and len({round(y, 6) for y in ys}) == 23
    assert all(abs(x) <= 0.02 for x in xs) and all(abs(y - 1.0) <= 0.02 for y in ys)
    again = scatter_figure(clips, "main", "rebase")
    assert list(again.data[0].x) == xs  # the same clip, the same place
    (diagonal,) = fig.layout.shapes
    assert (diagonal.x0, diagonal.y0, diagonal.x1, diagonal.y1) == (-0.05, -0.05, 1.1, 1.1)
    failed = scatter_figure([clip("u0", None, None)], "main", "rebase")
    assert abs(failed.data[0].x[0] - 1.05) <= 0.02  # no grade: drawn past the cap


def test_jitter_is_bounded_and_fixed() -> None:
    values = [jitter(f"k{i}") for i in range(1000)]
    assert max(values) <= 0.02 and min(values) >= -0.02
    assert max(values) > 0.015 and min(values) < -0.015  # it uses the width
    assert jitter("k1") == values[1]


def test_reproduce_commands_wrap() -> None:
    assert "pre{white-space:pre-wrap;overflow-wrap:anywhere" in CSS


def test_failure_mode_bars_put_the_baseline_first() -> None:
    rows = [
        ModeCount("a-rebase / default", "garbled", 7),
        ModeCount("main / default", "garbled", 2),
        ModeCount("b-rebase / default", "silence", 1),
        ModeCount("main / default", "silence", 1),
    ]
    fig = modes_figure(rows, {"main"})
    assert list(fig.layout.xaxis.categoryarray) == [
        "main / default",
        "a-rebase / default",
        "b-rebase / default",
    ]
