"""The freshness watchdog (what `omni_freshness` calls at 09:00 UTC): a branch without a complete
run for the night, and a series without a gate decision for it, are INFRA alerts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import keys
from omni_tasks.alerts.infra import raise_infra
from omni_tasks.series import Series
from omni_tasks.store.queries import sql
from omni_tasks.store.runs import has_fresh_run

DEADLINE = "09:00 UTC"  # the omni_freshness DAG's schedule


def check_freshness(
    conn: psycopg.Connection[Any], series: Series, branches: list[str], nightly: dt.date
) -> list[str]:
    """A series' branches without a complete run for `nightly`; each missing one raises an
    INFRA alert."""
    missing = [b for b in branches if not has_fresh_run(conn, series, b, nightly)]
    name = series.name
    for branch in missing:
        raise_infra(
            conn,
            keys.freshness(series.key, branch),
            f"INFRA no {branch} results for the {nightly} nightly ({name})",
            [f"no complete {name} run of {branch} for {nightly} by the deadline"],
            dedup=nightly.isoformat(),
        )
    conn.commit()
    return missing


def check_decided(
    conn: psycopg.Connection[Any], series: Series, variant: str, nightly: dt.date
) -> bool:
    """Whether the series was decided for `nightly`; when not, an INFRA alert says so (the
    night ran late, or a task died before `decide`)."""
    args = {**series.args(), "variant": variant, "nightly": nightly}
    if conn.execute(sql("series_decided"), args).fetchone() is not None:
        return True
    raise_infra(
        conn,
        keys.freshness(series.key, "decision"),
        f"INFRA no nightly decided for {series.label} ({variant}) by {DEADLINE}",
        [f"no gate decision of {series.name} ({variant}) for {nightly} by {DEADLINE}"],
        dedup=nightly.isoformat(),
    )
    conn.commit()
    return False
