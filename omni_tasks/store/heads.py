"""Branch heads per night: the commit each branch pointed at when the nightly first looked."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.store.db import typed_one
from omni_tasks.store.queries import sql


@dataclass(frozen=True)
class RecordedHead:
    commit_sha: str
    reconstructed: bool  # a backfill's head, found after the fact


def recorded_head(
    conn: psycopg.Connection[Any], benchmark: str, branch: str, nightly: dt.date
) -> RecordedHead | None:
    """The head recorded for `branch` on `nightly`, if any."""
    args = {"benchmark": benchmark, "branch": branch, "nightly": nightly}
    return typed_one(conn, RecordedHead, "branch_head", **args)


def record_head(
    conn: psycopg.Connection[Any],
    benchmark: str,
    branch: str,
    nightly: dt.date,
    commit_sha: str,
    reconstructed: bool,
) -> None:
    """The first head seen on a night is the one that counts (rebases force-push later)."""
    conn.execute(
        sql("upsert_branch_head"),
        {
            "benchmark": benchmark,
            "branch": branch,
            "nightly": nightly,
            "commit_sha": commit_sha,
            "commit_time": None,
            "reconstructed": reconstructed,
        },
    )
