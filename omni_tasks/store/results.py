"""Computed results in the results DB: run statistics and paired comparisons (one row each,
keyed so a recomputation overwrites), and the series the trend reads."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.contracts import JsonObject, RunStats
from omni_tasks.gates.advice import GateAdvice
from omni_tasks.records import NightlyRun
from omni_tasks.series import Series
from omni_tasks.store.db import one, typed
from omni_tasks.store.queries import sql

Row = dict[str, Any]

# run_stats columns the dashboards read directly (the whole object is kept in `stats`).
STATS_COLUMNS = (
    "n_expected",
    "n_scored",
    "n_failed",
    "n_infra",
    "coverage",
    "mean_wer",
    "median_wer",
    "capped_mean_wer",
    "tail_fraction",
)


def upsert_run_stats(
    conn: psycopg.Connection[Any],
    grading_id: int,
    tau: float,
    policy_version: str,
    run: RunStats,
) -> None:
    stats = run.to_json()
    ci = run.tail_fraction_ci or (None, None)
    conn.execute(
        sql("upsert_run_stats"),
        {
            "grading_id": grading_id,
            "tau": tau,
            "policy_version": policy_version,
            **{k: stats[k] for k in STATS_COLUMNS},
            "tail_ci_low": ci[0],
            "tail_ci_high": ci[1],
            "stats": Jsonb(stats),
        },
    )


def upsert_comparison(
    conn: psycopg.Connection[Any], columns: Mapping[str, object], result: JsonObject
) -> int:
    """The comparison row (its columns, and the whole result kept as JSON); its id."""
    row = one(conn.execute(sql("upsert_comparison"), {**columns, "result": Jsonb(result)}))
    return int(row["comparison_id"])


def nightly_runs(
    conn: psycopg.Connection[Any], series: Series, nightly: dt.date
) -> list[NightlyRun]:
    """A series' runs of a night with their latest complete grading, as the gate pairs them."""
    return typed(conn, NightlyRun, "nightly_runs", **series.args(), nightly=nightly)


def series(conn: psycopg.Connection[Any], name: str, key: Mapping[str, object]) -> list[Row]:
    """A trend series: `nightly_series` (stored statistics), `official_series` (the
    harness's own figure, summary-only nights included) or `paired_delta_series` (the gate's
    nightly paired Δ tail against a baseline)."""
    if name not in ("nightly_series", "official_series", "paired_delta_series"):
        raise ValueError(f"unknown series {name!r}")
    return [dict(r) for r in conn.execute(sql(name), key)]


def known_breaks(conn: psycopg.Connection[Any], key: Mapping[str, object]) -> list[dt.date]:
    """Nights where the stack, grader or config changed (the trend does not call them shifts)."""
    return [r["nightly"] for r in conn.execute(sql("known_breaks"), key)]


def stored_stats(
    conn: psycopg.Connection[Any], grading_id: int, tau: float, policy_version: str
) -> RunStats | None:
    """The statistics stored for a grading at tau under a policy version, if any."""
    args = {"grading_id": grading_id, "tau": tau, "policy_version": policy_version}
    row = conn.execute(sql("stored_stats"), args).fetchone()
    return None if row is None else RunStats.from_json(row["stats"])


def upsert_gate_advice(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    nightly: dt.date,
    advice: GateAdvice,
) -> None:
    """A series' gate advice of the night (the whole advice kept as JSON, its figures the
    statement reads by their field names)."""
    doc = dataclasses.asdict(advice)
    low, high = advice.p_fail_interval
    args = {**series.args(), "branch": branch, "nightly": nightly, "advice": Jsonb(doc)}
    conn.execute(sql("upsert_gate_advice"), {**doc, **args, "p_fail_low": low, "p_fail_high": high})


def gate_advice_of_night(
    conn: psycopg.Connection[Any], series: Series, nightly: dt.date
) -> list[Row]:
    return list(conn.execute(sql("gate_advice_of_night"), {**series.args(), "nightly": nightly}))
