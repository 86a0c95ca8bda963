"""Reads of the dashboard views (sql/migrations/0002, 0005-0007) for the HTML report, the demo
and the CLI: the same figures Grafana shows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg

from omni_tasks.contracts import DecisionRow, JsonObject
from omni_tasks.series import Series
from omni_tasks.store.db import typed as _typed
from omni_tasks.store.db import typed_one
from omni_tasks.store.queries import sql

Row = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class GateRow(DecisionRow):
    """One stored decision of a night with its paired table (v_gate_history)."""

    time: dt.datetime
    mcnemar_p: float | None
    comparison_id: int | None
    n_paired: int | None
    stable_broken: int | None
    regressed: int | None
    improved: int | None
    stable_ok: int | None
    delta_tail_fraction: float | None
    delta_tail_ci_low: float | None
    delta_tail_ci_high: float | None
    delta_capped_mean_wer: float | None
    baseline_run_key: str | None
    reasons: list[str] | None
    history: JsonObject | None = None  # its DecisionHistory, as stored


@dataclass(frozen=True)
class _BranchNight:
    """The key of a trend view's row: one branch × variant of a series on one night."""

    time: dt.datetime
    benchmark: str
    model: str
    lane: str
    nightly: dt.date
    branch: str
    variant: str


@dataclass(frozen=True)
class TrendRow(_BranchNight):
    """One branch × variant's figures on one night (v_nightly_trend)."""

    tau: float
    runs: int
    tail_fraction: float | None
    tail_ci_low: float | None
    tail_ci_high: float | None
    capped_mean_wer: float | None
    mean_wer: float | None
    coverage: float | None
    verdict: str | None
    confirmed: bool | None


@dataclass(frozen=True)
class OfficialRow(_BranchNight):
    """The harness's own figure for one branch × variant on one night (v_official_trend)."""

    runs: int
    summary_only: bool
    official_mean: float | None
    evaluated: Decimal | None


@dataclass(frozen=True)
class ScoreRow:
    """Item-level scores of one branch × variant (item_scores_of_night)."""

    branch: str
    variant: str
    accuracy: float | None
    sim_mean: float | None
    utmos_mean: float | None


@dataclass(frozen=True)
class RegressedClip:
    """A comparison's regressed clip, both sides heard (comparison_regressed_clips.sql)."""

    utt_id: str
    reference: str
    candidate_heard: str | None
    candidate_wer: float | None
    baseline_heard: str | None
    baseline_wer: float | None
    candidate_status: str
    audio_uri: str | None
    baseline_audio_uri: str | None


@dataclass(frozen=True)
class FleetRow:
    """One series × candidate of the fleet, ours beside upstream's (fleet_overview.sql)."""

    benchmark: str
    model: str
    lane: str
    candidate_branch: str
    variant: str
    nightly: dt.date | None
    verdict: str | None
    regressed_14d: int | None
    upstream_nightly: dt.date | None
    upstream_verdict: str | None
    upstream_failing_14d: int | None
    upstream_fail_streak: int | None
    validity: list[str] | None
    blocking: bool | None
    sku: str | None


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


def _rows(conn: psycopg.Connection[Any], name: str, **args: object) -> list[Row]:
    return [dict(r) for r in conn.execute(sql(name), args)]


def gate_history(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[GateRow]:
    return _typed(conn, GateRow, "gate_history_of_night", **series.args(), nightly=nightly)


def nightly_trend(
    conn: psycopg.Connection[Any], series: Series, tau: float, first: dt.date, last: dt.date
) -> list[TrendRow]:
    args = {**series.args(), "tau": tau, "first": first, "last": last}
    return _typed(conn, TrendRow, "nightly_trend_between", **args)


def failure_modes(
    conn: psycopg.Connection[Any], series: Series, tau: float, nightly: dt.date
) -> list[ModeCount]:
    args = {**series.args(), "tau": tau, "nightly": nightly}
    return _typed(conn, ModeCount, "failure_modes_of_night", **args)


def night_simulated(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> bool:
    return bool(_rows(conn, "night_simulated", **series.args(), nightly=nightly)[0]["s"])


def official(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[OfficialRow]:
    return _typed(conn, OfficialRow, "official_of_night", **series.args(), nightly=nightly)


def item_scores(
    conn: psycopg.Connection[Any], series: Series, tau: float, nightly: dt.date
) -> list[ScoreRow]:
    args = {**series.args(), "tau": tau, "nightly": nightly}
    return _typed(conn, ScoreRow, "item_scores_of_night", **args)


@dataclass(frozen=True)
class _Sides:
    """A comparison's gradings and runs, which its clip queries take as constants."""

    candidate_grading_id: int
    candidate_run_id: int
    baseline_grading_id: int
    baseline_run_id: int


def comparison_regressed_clips(
    conn: psycopg.Connection[Any], comparison_id: int
) -> list[RegressedClip]:
    sides = typed_one(conn, _Sides, "comparison_sides", comparison_id=comparison_id)
    if sides is None:
        return []
    args = {**vars(sides), "comparison_id": comparison_id}
    return _typed(conn, RegressedClip, "comparison_regressed_clips", **args)


def paired_clip_wers(conn: psycopg.Connection[Any], comparison_id: int) -> list[PairedWer]:
    sides = typed_one(conn, _Sides, "comparison_sides", comparison_id=comparison_id)
    return [] if sides is None else _typed(conn, PairedWer, "paired_clip_wers", **vars(sides))


def latest_night(conn: psycopg.Connection[Any], series: Series, *, decided: bool) -> dt.date | None:
    """The latest night with runs stored, or (decided) with gate decisions."""
    name = "latest_decision_night" if decided else "latest_run_night"
    return _rows(conn, name, **series.args())[0]["n"]


def series_on_night(conn: psycopg.Connection[Any], night: dt.date) -> list[Series]:
    """The series with runs on `night`."""
    return [Series.of(r) for r in _rows(conn, "series_on_night", nightly=night)]


def series_with_runs(conn: psycopg.Connection[Any]) -> list[tuple[Series, dt.date]]:
    """Every series with runs, with its newest night."""
    return [(Series.of(r), r["latest"]) for r in _rows(conn, "series_with_runs")]


def series_has_night(conn: psycopg.Connection[Any], series: Series, night: dt.date) -> bool:
    return bool(_rows(conn, "series_has_night", **series.args(), nightly=night))


def fleet_overview(conn: psycopg.Connection[Any]) -> list[FleetRow]:
    """Every series: our newest verdict per candidate, upstream's newest with its record."""
    return _typed(conn, FleetRow, "fleet_overview")
