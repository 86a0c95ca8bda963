"""Gate decisions and the per-key series they form, as the gate writes them and the alert
lifecycle, the auto-bisect and the reports read them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.analysis.bisect import NightEvidence
from omni_tasks.series import Series
from omni_tasks.store.queries import sql

Row = dict[str, Any]


def decision_by_id(conn: psycopg.Connection[Any], decision_id: int) -> Row | None:
    row: Row | None = conn.execute(sql("decision_by_id"), {"decision_id": decision_id}).fetchone()
    return row


def decisions_of_nights(
    conn: psycopg.Connection[Any],
    series: Series,
    first: dt.date,
    last: dt.date,
    policy_version: str,
    key: Row | None = None,
) -> list[Row]:
    """Decisions from `first` to `last`, all of them or one key's (candidate, baseline,
    variant)."""
    return conn.execute(
        sql("decisions_of_night"),
        {
            **series.args(),
            "nightly": first,
            "until": last,
            "policy_version": policy_version,
            "candidate_branch": key and key["candidate_branch"],
            "baseline_branch": key and key["baseline_branch"],
            "variant": key and key["variant"],
        },
    ).fetchall()


def _series_key(d: Row) -> dict[str, Any]:
    return {
        **Series.of(d).args(),
        "candidate_branch": d["candidate_branch"],
        "baseline_branch": d["baseline_branch"],
        "variant": d["variant"],
        "policy_version": d["policy_version"],
    }


def verdicts_since(
    conn: psycopg.Connection[Any], d: Row, after: dt.date, until: dt.date
) -> list[Row]:
    """The verdicts of `d`'s key after `after` up to `until`."""
    return conn.execute(
        sql("verdicts_since"), {**_series_key(d), "after": after, "until": until}
    ).fetchall()


def verdicts_until(conn: psycopg.Connection[Any], d: Row, until: dt.date) -> list[Row]:
    """The verdicts of `d`'s key up to `until`, with each night's candidate commit."""
    return conn.execute(sql("verdicts_until"), {**_series_key(d), "until": until}).fetchall()


def range_evidence(conn: psycopg.Connection[Any], d: Row, until: dt.date) -> list[NightEvidence]:
    """`d`'s key's nights up to `until`, newest first, as the bisect range reads them."""
    return [
        NightEvidence(
            r["nightly"],
            r["verdict"],
            r["commit_sha"],
            None if r["n11"] is None else (r["n11"], r["n12"], r["n21"], r["n22"]),
            r["vllm_build"] or r["vllm"],
        )
        for r in verdicts_until(conn, d, until)
    ]


def decision_series(conn: psycopg.Connection[Any], key: dict[str, Any]) -> list[Row]:
    return [dict(r) for r in conn.execute(sql("decision_series"), key)]


def set_confirmed(conn: psycopg.Connection[Any], decision_id: int, confirmed: bool) -> None:
    conn.execute(sql("set_confirmed"), {"decision_id": decision_id, "confirmed": confirmed})


def upsert_decision(conn: psycopg.Connection[Any], params: dict[str, Any]) -> None:
    """A night's decision for one key (reasons and the policy it was decided under as JSON)."""
    json = {"reasons": Jsonb(params["reasons"]), "policy": Jsonb(params["policy"])}
    conn.execute(sql("upsert_gate_decision"), {**params, **json})
