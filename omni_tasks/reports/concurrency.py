"""The concurrency experiment as an HTML page: each changed or leaked item with both sides,
texts and audio (Opus players), alone beside co-batched."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from markupsafe import Markup

from omni_tasks.analysis.concurrency import ConcurrencyResult, ItemChange, VoiceLeak
from omni_tasks.config import get_settings
from omni_tasks.reports.html import CSS, MAX_AUDIO_CLIPS, audio_player, render
from omni_tasks.trust.names import path_component


def report_path(experiment_id: str) -> Path:
    return (
        get_settings().home / "reports" / f"{path_component(f'concurrency_{experiment_id}')}.html"
    )


def concurrency_report(result: ConcurrencyResult, title: str, simulated: bool) -> str:
    """Each comparison with its changed outputs and voice leaks, both sides played."""
    comparisons = [
        (
            c,
            [_played(i, f) for i, f in enumerate(c.flipped)],
            [
                _played(
                    i, leak, margin=f"{leak.margin:+.2f}", alone_margin=f"{leak.alone_margin:+.2f}"
                )
                for i, leak in enumerate(c.voice.leaks if c.voice else ())
            ],
        )
        for c in result.comparisons
    ]
    return render(
        "concurrency.html",
        title=title,
        css=Markup(CSS),
        simulated=simulated,
        comparisons=comparisons,
        runs=list(result.runs.items()),
        generated=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M}",
    )


def _played(i: int, row: ItemChange | VoiceLeak, **cells: str) -> dict[str, object]:
    """A row of an item's two sides: its fields, `cells` over them, a broken output marked,
    and both players (the first MAX_AUDIO_CLIPS rows)."""
    out: dict[str, object] = {**vars(row), **cells}
    for side in ("alone", "batched"):
        uri = out[f"{side}_audio"]
        out[f"{side}_player"] = audio_player(str(uri)) if uri and i < MAX_AUDIO_CLIPS else ""
        if out.get(f"{side}_broken"):
            out[side] = f"{out[side]} (broken)"
    return out


def write_report(result: ConcurrencyResult, title: str, simulated: bool) -> Path:
    path = report_path(result.experiment_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(concurrency_report(result, title, simulated), encoding="utf-8")
    return path
