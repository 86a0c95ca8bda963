"""Audio retention: the audio of nights older than the retention window is removed, never the
rows (they are small and the unit of truth), and never audio an open alert cites (its Slack
thread and report play it). The window is the deployment config's `retention.audio_days`, or
`omni-tasks audio prune --older-than DAYS`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import fsspec
import psycopg

from omni_tasks.store.queries import sql
from omni_tasks.trust.names import path_component


@dataclass(frozen=True)
class Pruned:
    run_key: str
    nightly: dt.date
    clips: int
    bytes: int


def prune_audio(
    conn: psycopg.Connection[Any], audio_root: str, cutoff: dt.date, *, dry_run: bool = False
) -> list[Pruned]:
    """Remove the audio of every run before `cutoff` that no open alert cites (one run at a
    time: a crash leaves every run either pruned or whole)."""
    out = []
    for row in conn.execute(sql("prunable_runs"), {"cutoff": cutoff}).fetchall():
        fs, path = fsspec.core.url_to_fs(f"{audio_root}/{path_component(row['run_key'])}")
        size = sum(fs.du(path, total=False).values()) if fs.exists(path) else 0
        if not dry_run:
            with conn.transaction():
                conn.execute(sql("forget_audio"), {"run_id": row["run_id"]})
            if fs.exists(path):
                fs.rm(path, recursive=True)
        out.append(Pruned(row["run_key"], row["nightly"], int(row["clips"]), int(size)))
    return out
