"""Branch heads per night: the commit each branch pointed at when the nightly first looked."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.store.queries import sql


def recorded_head(
    conn: psycopg.Connection[Any], benchmark: str, branch: str, nightly: dt.date
) -> dict[str, Any] | None:
    """(commit_sha, reconstructed) recorded for `branch` on `nightly`, if any."""
    args = {"benchmark": benchmark, "branch": branch, "nightly": nightly}
    row: dict[str, Any] | None = conn.execute(sql("branch_head"), args).fetchone()
    return row


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
