"""Gate decisions and the per-key series they form, as the gate writes them and the alert
lifecycle, the auto-bisect and the reports read them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.analysis.bisect import NightEvidence
from omni_tasks.contracts import DecisionKey
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


def upsert_decision(conn: psycopg.Connection[Any], params: Mapping[str, object]) -> int:
    """A night's decision for one key (reasons and the policy it was decided under as JSON);
    its id."""
    json = {"reasons": Jsonb(params["reasons"]), "policy": Jsonb(params["policy"])}
    row = conn.execute(sql("upsert_gate_decision"), {**params, **json}).fetchone()
    assert row is not None
    return int(row["decision_id"])
