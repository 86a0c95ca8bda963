"""Gate decisions and the per-key series they form, as the gate writes them and the alert
lifecycle, the auto-bisect and the reports read them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.analysis.bisect import NightEvidence
from omni_tasks.contracts import DecisionKey
from omni_tasks.contracts.night import NightDecisionRow
from omni_tasks.series import Series
from omni_tasks.store.db import one
from omni_tasks.store.queries import sql


def range_evidence(
    conn: psycopg.Connection[Any], key: DecisionKey, until: dt.date
) -> list[NightEvidence]:
    """The key's nights up to `until`, newest first, as the bisect range reads them, with
    each night's candidate commit."""
    return [
        NightEvidence(
            r["nightly"],
            r["verdict"],
            r["commit_sha"],
            None if r["n11"] is None else (r["n11"], r["n12"], r["n21"], r["n22"]),
            r["vllm_build"] or r["vllm"],
        )
        for r in conn.execute(sql("verdicts_until"), {**key.args(), "until": until})
    ]


def set_confirmed(conn: psycopg.Connection[Any], decision_id: int, confirmed: bool) -> None:
    conn.execute(sql("set_confirmed"), {"decision_id": decision_id, "confirmed": confirmed})


def upsert(
    conn: psycopg.Connection[Any], series: Series, row: NightDecisionRow, comparison_id: int | None
) -> int:
    """A night's decision for one key of the series (its reasons and the policy it was decided
    under as JSON, and its history evidence); its id."""
    history = row.decision.history
    params = {
        **dataclasses.asdict(row.decision),  # the key's branches and variant, the verdict
        **series.args(),
        "policy_version": str(row.policy["policy_version"]),
        "comparison_id": comparison_id,
        "candidate_run_id": row.candidate_run_id,
        "baseline_run_id": row.baseline_run_id,
        "reasons": Jsonb(row.reasons),
        "policy": Jsonb(row.policy),
        "history": None if history is None else Jsonb(history.to_json()),
    }
    return int(one(conn.execute(sql("upsert_gate_decision"), params))["decision_id"])
