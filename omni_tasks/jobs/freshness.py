"""The freshness watchdog: a branch without a complete run for the night by the deadline is an
INFRA alert (what `omni_freshness` calls)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import keys
from omni_tasks.alerts.lifecycle import raise_infra
from omni_tasks.series import Series
from omni_tasks.store.runs import has_fresh_run


def check_freshness(
    conn: psycopg.Connection[Any], series: Series, branches: list[str], nightly: dt.date
) -> list[str]:
    """A series' branches without a complete run for `nightly`; each missing one raises an
    INFRA alert."""
    missing = []
    name = series.name
    for branch in branches:
        if not has_fresh_run(conn, series, branch, nightly):
            missing.append(branch)
            raise_infra(
                conn,
                keys.freshness(series.key, branch),
                f"INFRA no {branch} results for the {nightly} nightly ({name})",
                [f"no complete {name} run of {branch} for {nightly} by the deadline"],
                dedup=nightly.isoformat(),
            )
    conn.commit()
    return missing
