"""Same-morning re-runs (jobs/rerun.py): the night's decisions that want one, the seeds on
record that fresh seeds skip, and the stored results the night's decision reads back."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.contracts import DecisionHistory, JsonObject
from omni_tasks.contracts.night import NightKey
from omni_tasks.contracts.rerun import RerunResult
from omni_tasks.series import Series
from omni_tasks.store.db import typed
from omni_tasks.store.queries import sql


@dataclass(frozen=True)
class Wanted:
    """A REGRESSED, unconfirmed decision of the night and the runs it rests on."""

    candidate_branch: str
    baseline_branch: str
    candidate_run_key: str
    candidate_commit: str | None
    baseline_run_key: str
    baseline_commit: str | None
    history: JsonObject | None  # the decision's history evidence, as stored

    @property
    def evidence(self) -> DecisionHistory | None:
        return None if self.history is None else DecisionHistory.from_json(self.history)


def wanted(
    conn: psycopg.Connection[Any],
    series: Series,
    nightly: dt.date,
    variant: str,
    policy_version: str,
) -> list[Wanted]:
    return typed(
        conn,
        Wanted,
        "rerun_wanted",
        **series.args(),
        nightly=nightly,
        variant=variant,
        policy_version=policy_version,
    )


def seeds_on_record(
    conn: psycopg.Connection[Any], series: Series, floor: int, own: str
) -> set[int]:
    """Seeds from `floor` up that any run of the series ran, but those of runs keyed `own…`."""
    found = conn.execute(sql("seeds_on_record"), {**series.args(), "floor": floor, "own": own})
    return {int(r["seed"]) for r in found}


def upsert(
    conn: psycopg.Connection[Any],
    series: Series,
    nightly: dt.date,
    variant: str,
    result: RerunResult,
    run_keys: list[str],
) -> None:
    conn.execute(
        sql("upsert_rerun"),
        {
            **series.args(),
            "nightly": nightly,
            "candidate_branch": result.candidate_branch,
            "baseline_branch": result.baseline_branch,
            "variant": variant,
            "result": Jsonb(result.to_json()),
            "run_keys": run_keys,
        },
    )


def of_window(
    conn: psycopg.Connection[Any], series: Series, first: dt.date, last: dt.date
) -> dict[NightKey, RerunResult]:
    """The series' stored re-run results of nights `first`..`last`, by night and pair."""
    rows = conn.execute(sql("night_reruns"), {**series.args(), "first": first, "last": last})
    return {
        (r["nightly"], r["candidate_branch"], r["baseline_branch"], r["variant"]): (
            RerunResult.from_json(r["result"])
        )
        for r in rows
    }
