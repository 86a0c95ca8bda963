"""Reads of the dashboard views (sql/migrations/0002, 0005-0007) for the HTML report, the demo
and the CLI: the same figures Grafana shows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import class_row

from omni_tasks.series import Series
from omni_tasks.store.queries import sql

Row = dict[str, Any]


@dataclass(frozen=True)
class ModeCount:
    """Broken clips of one failure mode on one side of a night (failure_modes_of_night.sql)."""

    branch: str  # "branch / variant"
    mode: str
    clips: int


@dataclass(frozen=True)
class PairedWer:
    """One clip's capped WER on both sides of a comparison; None: no grade (paired_clip_wers)."""

    utt_id: str
    baseline_wer: float | None
    candidate_wer: float | None
    reference: str


def _rows(conn: psycopg.Connection[Any], name: str, **args: Any) -> list[Row]:
    return [dict(r) for r in conn.execute(sql(name), args)]


def gate_history(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[Row]:
    return _rows(conn, "gate_history_of_night", **series.args(), nightly=nightly)


def nightly_trend(
    conn: psycopg.Connection[Any], series: Series, tau: float, first: dt.date, last: dt.date
) -> list[Row]:
    return _rows(conn, "nightly_trend_between", **series.args(), tau=tau, first=first, last=last)


def failure_modes(
    conn: psycopg.Connection[Any], series: Series, tau: float, nightly: dt.date
) -> list[ModeCount]:
    args = {**series.args(), "tau": tau, "nightly": nightly}
    cur = conn.cursor(row_factory=class_row(ModeCount))
    return cur.execute(sql("failure_modes_of_night"), args).fetchall()


def night_simulated(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> bool:
    return bool(_rows(conn, "night_simulated", **series.args(), nightly=nightly)[0]["s"])


def official(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[Row]:
    return _rows(conn, "official_of_night", **series.args(), nightly=nightly)


def item_scores(
    conn: psycopg.Connection[Any], series: Series, tau: float, nightly: dt.date
) -> list[Row]:
    return _rows(conn, "item_scores_of_night", **series.args(), tau=tau, nightly=nightly)


def comparison_regressed_clips(conn: psycopg.Connection[Any], comparison_id: int) -> list[Row]:
    return _rows(conn, "comparison_regressed_clips", comparison_id=comparison_id)


def paired_clip_wers(conn: psycopg.Connection[Any], comparison_id: int) -> list[PairedWer]:
    cur = conn.cursor(row_factory=class_row(PairedWer))
    return cur.execute(sql("paired_clip_wers"), {"comparison_id": comparison_id}).fetchall()


def latest_night(conn: psycopg.Connection[Any], series: Series, *, decided: bool) -> dt.date | None:
    """The latest night with runs stored, or (decided) with gate decisions."""
    name = "latest_decision_night" if decided else "latest_run_night"
    night: dt.date | None = _rows(conn, name, **series.args())[0]["n"]
    return night


def series_on_night(conn: psycopg.Connection[Any], night: dt.date) -> list[Series]:
    """The series with runs on `night`."""
    return [Series.of(r) for r in _rows(conn, "series_on_night", nightly=night)]


def series_with_runs(conn: psycopg.Connection[Any]) -> list[tuple[Series, dt.date]]:
    """Every series with runs, with its newest night."""
    return [(Series.of(r), r["latest"]) for r in _rows(conn, "series_with_runs")]


def series_has_night(conn: psycopg.Connection[Any], series: Series, night: dt.date) -> bool:
    return bool(_rows(conn, "series_has_night", **series.args(), nightly=night))


def fleet_overview(conn: psycopg.Connection[Any]) -> list[Row]:
    """Every series: our newest verdict per candidate, upstream's newest with its record."""
    return _rows(conn, "fleet_overview")
