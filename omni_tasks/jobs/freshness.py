"""The freshness watchdog: a branch without a complete run for the night by the deadline is an
INFRA alert (what `omni_freshness` calls)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import keys
from omni_tasks.alerts.lifecycle import raise_infra
from omni_tasks.store.runs import has_fresh_run


def check_freshness(
    conn: psycopg.Connection[Any], benchmark: str, branches: list[str], nightly: dt.date
) -> list[str]:
    """Branches without a complete run for `nightly`; each missing one raises an INFRA alert."""
    missing = []
    for branch in branches:
        if not has_fresh_run(conn, benchmark, branch, nightly):
            missing.append(branch)
            raise_infra(
                conn,
                keys.freshness(benchmark, branch),
                f"INFRA no {branch} results for the {nightly} nightly",
                [f"no complete {benchmark} run of {branch} for {nightly} by the deadline"],
                dedup=nightly.isoformat(),
            )
    conn.commit()
    return missing
