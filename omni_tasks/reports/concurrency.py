"""The concurrency experiment as an HTML page: each changed or leaked item with both sides,
texts and audio (Opus players), alone beside co-batched."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from markupsafe import Markup

from omni_tasks.analysis.concurrency import ConcurrencyResult
from omni_tasks.config import get_settings
from omni_tasks.reports.html import CSS, MAX_AUDIO_CLIPS, TEMPLATES, audio_player
from omni_tasks.trust.names import path_component


def report_path(experiment_id: str) -> Path:
    return (
        get_settings().home / "reports" / f"{path_component(f'concurrency_{experiment_id}')}.html"
    )


def concurrency_report(result: ConcurrencyResult, title: str, simulated: bool) -> str:
    comparisons: list[dict[str, Any]] = []
    for c in result.comparisons:
        changed = [
            {
                **vars(f),
                "alone_player": _player(f.alone_audio, i),
                "batched_player": _player(f.batched_audio, i),
            }
            for i, f in enumerate(c.flipped)
        ]
        leaks = [
            {
                **vars(leak),
                "margin": f"{leak.margin:+.2f}",
                "alone_margin": f"{leak.alone_margin:+.2f}",
                "alone_player": _player(leak.alone_audio, i),
                "batched_player": _player(leak.batched_audio, i),
            }
            for i, leak in enumerate(c.voice.leaks if c.voice else ())
        ]
        comparisons.append(
            {
                "alone": c.alone,
                "batched": c.batched,
                "verdict": c.verdict,
                "summary": c.summary,
                "flipped": c.flipped,
                "voice": c.voice,
                "changed": changed,
                "leaks": leaks,
            }
        )
    return TEMPLATES.get_template("concurrency.html").render(
        title=title,
        css=Markup(CSS),
        simulated=simulated,
        comparisons=comparisons,
        runs=list(result.runs.items()),
        generated=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M}",
    )


def _player(uri: str | None, i: int) -> Markup | str:
    return audio_player(uri) if uri and i < MAX_AUDIO_CLIPS else ""


def write_report(result: ConcurrencyResult, title: str, simulated: bool) -> Path:
    path = report_path(result.experiment_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(concurrency_report(result, title, simulated), encoding="utf-8")
    return path
