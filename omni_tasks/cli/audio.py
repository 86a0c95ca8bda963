"""Stored clip audio: retention."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import audio_app, console
from omni_tasks.config import get_settings


@audio_app.command("prune")
def audio_prune(
    older_than: Annotated[
        int | None,
        typer.Option(
            min=1, help="Days of audio to keep (default: the config's retention.audio_days, 90)"
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List; remove nothing")] = False,
) -> None:
    """Remove the audio of nights older than the retention window (clip rows stay; audio an
    open alert cites is kept). About 39 MB per 200 clips of speech."""
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.deployment.sections import retention
    from omni_tasks.store.retention import prune_audio

    if older_than is None:
        with opt.fails_on(ConfigError):
            older_than = retention().audio_days
    cutoff = dt.date.today() - dt.timedelta(days=older_than)
    root = get_settings().audio_root_url
    pruned = opt.on_db(lambda conn: prune_audio(conn, root, cutoff, dry_run=dry_run))
    verb = "would remove" if dry_run else "removed"
    for p in pruned:
        console.print(f"{verb} {p.run_key} ({p.nightly}): {p.clips} clip(s)")
    total = sum(p.bytes for p in pruned) / 1e6
    console.print(f"{verb} the audio of {len(pruned)} run(s) before {cutoff}, {total:.1f} MB")
