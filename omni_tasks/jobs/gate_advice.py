"""Gate advice for a stored series: which nights describe "nothing changed", each night's
per-item parts of the gated figure, and our paired tail test's MDE on the same runs."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import psycopg

from omni_tasks import benchmarks
from omni_tasks.analysis.noise import calibrate
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.gates.advice import CannotAdvise, GateAdvice, Night, advise
from omni_tasks.gates.references import Reference
from omni_tasks.gates.table import UpstreamGate, gates_of
from omni_tasks.jobs.statistics import load_graded_run
from omni_tasks.records import ClipRecord
from omni_tasks.series import Series
from omni_tasks.store import results
from omni_tasks.store import runs as run_store

if TYPE_CHECKING:
    from omni_tasks.deployment.schema import NightlyParams

MIN_UNCHANGED = 5  # nights of one commit before they are used alone
# The nightly's advice reads this many days of a series' history, never all of it: its cost
# stays that of a bounded window however long the series has run.
NIGHTLY_WINDOW_DAYS = 60
NIGHTLY_DRAWS = 1000  # the nightly's advice: a quarter of the CLI's synthetic nights
USABLE = ("complete", "summary_only")


class NoHistory(ValueError):
    """No advice from the stored nights (too few of them, or a runaway tail too thin to fit);
    the message says why."""


def default_gate(series: Series) -> UpstreamGate | None:
    """The benchmark's own gate figure with no threshold yet (`--threshold` gives it)."""
    figure = benchmarks.get(series.benchmark).gate_figure
    if figure is None:
        return None
    return UpstreamGate(series.benchmark, series.model, figure[0], figure[1], ())


def advise_series(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    gate: UpstreamGate,
    policy: GatePolicy,
    *,
    target: float = 0.02,
    commit: str | None = None,
    until: dt.date | None = None,
    window_days: int | None = None,
    draws: int = 4000,
    reference: Reference | None = None,
) -> GateAdvice:
    """Advice for `gate` on `series`' `branch`, from the nights of one unchanged commit
    (`commit`, else the commit with the most nights if it has enough) or, failing that, every
    night of the branch (said so in the basis); only nights up to `until` when given, and
    only the last `window_days` of them when given. `reference`: a registered reference to
    judge beside the gate (else one is set from the history)."""
    since = until - dt.timedelta(days=window_days) if until and window_days else None
    bench = benchmarks.get(series.benchmark)
    rows = [
        r
        for r in run_store.list_runs(
            conn,
            benchmark=series.benchmark,
            model=series.model,
            lane=series.lane,
            branch=branch,
            limit=5000,
        )
        if r["status"] in USABLE
        and r["variant"] == "default"
        and (until is None or r["nightly"] <= until)
        and (since is None or r["nightly"] > since)
    ]
    if not rows:
        raise NoHistory(f"no stored nights of {series.label} on {branch}")
    chosen, basis = _unchanged(rows, commit)
    policy = policy.for_benchmark(series.benchmark)
    tau = policy.primary_tau
    chosen_keys = {r["run_key"] for r in chosen}
    nights: list[Night] = []
    history: list[Night] = []
    clip_runs: list[list[ClipRecord]] = []
    for r in sorted(rows, key=lambda r: (r["nightly"], r["run_key"])):
        if r["status"] == "summary_only":
            value = run_store.get_run(conn, r["run_key"]).summary.get(gate.figure)
            figure = float(value) if isinstance(value, int | float) else None
            night = Night(r["nightly"], r["commit_sha"], figure, None)
        else:
            clips = load_graded_run(conn, r["run_key"]).clips
            parts = bench.figure_values(gate.figure, clips)
            values = {c.utt_id: x for c, x in zip(clips, parts, strict=True)}
            night = Night(
                r["nightly"], r["commit_sha"], bench.figure_mean(gate.figure, clips), values
            )
            if r["run_key"] in chosen_keys:
                clip_runs.append(clips)
        history.append(night)
        if r["run_key"] in chosen_keys:
            nights.append(night)
    broken = None
    if bench.gate_figure and gate.figure == bench.gate_figure[0]:
        broken = (lambda v: v > tau) if bench.judged == "wer" else (lambda v: v == 0.0)
    try:
        advice = advise(
            nights,
            gate,
            target=target,
            broken=broken,
            basis=basis,
            history=history,
            draws=draws,
            reference=reference,
        )
    except CannotAdvise as exc:  # too few nights, or a tail too thin: any other is a bug
        raise NoHistory(f"{series.label} on {branch}: {exc}") from None
    if len(clip_runs) >= 2 and len(clip_runs) == len(nights):
        cal = calibrate(clip_runs, tau, policy.alpha)
        advice = replace(advice, tail_mde=cal.mde, tail_mde_items=math.ceil(cal.mde * cal.n_clips))
    return advice


def _unchanged(rows: list[dict[str, Any]], commit: str | None) -> tuple[list[dict[str, Any]], str]:
    if commit is not None:
        mine = [r for r in rows if (r["commit_sha"] or "").startswith(commit)]
        if not mine:
            raise NoHistory(f"no stored nights of commit {commit}")
        return mine, f"{len(mine)} nights of commit {mine[0]['commit_sha']}"
    counts = Counter(r["commit_sha"] for r in rows if r["commit_sha"])
    if counts:
        best, n = max(
            counts.items(),
            key=lambda kv: (kv[1], max(r["nightly"] for r in rows if r["commit_sha"] == kv[0])),
        )
        if n >= MIN_UNCHANGED:
            return [r for r in rows if r["commit_sha"] == best], f"{n} nights of commit {best}"
    commits = len({r["commit_sha"] for r in rows})
    return rows, (
        f"all {len(rows)} nights of the branch ({commits} commits): no commit has "
        f"{MIN_UNCHANGED} nights, so real changes add to the variation"
    )


def record_night(
    conn: psycopg.Connection[Any], params: NightlyParams, nightly: dt.date, policy: GatePolicy
) -> int:
    """The nightly's gate advice for one series: each of its upstream gates judged on its
    baseline branch's stored nights up to `nightly`, stored for the report and the dashboard
    panel; a series with too few nights, or a runaway tail too thin to fit, gets none.
    Returns how many gates were advised."""
    stored = 0
    for gate in gates_of(params.series, params.upstream_gates()):
        try:
            advice = advise_series(
                conn,
                params.series,
                params.baseline,
                gate,
                policy,
                until=nightly,
                window_days=NIGHTLY_WINDOW_DAYS,
                draws=NIGHTLY_DRAWS,
            )
        except NoHistory:
            continue
        results.upsert_gate_advice(conn, params.series, params.baseline, nightly, advice)
        stored += 1
    return stored


def advise_fleet(
    conn: psycopg.Connection[Any],
    nightly: dt.date,
    policy: GatePolicy,
    series: Sequence[NightlyParams],
) -> dict[str, str]:
    """The night's gate advice for every series as it ships (default variant), after the
    night is decided and off the alerts' path; a series that fails is reported (name → error)
    while every other is advised."""
    failed = {}
    for params in series:
        if params.variant != "default":
            continue  # a gate judges the series as it ships
        try:
            record_night(conn, params, nightly, policy)
            conn.commit()
        except (psycopg.Error, ValueError, ArithmeticError, LookupError) as exc:
            conn.rollback()
            failed[params.series.label] = f"{type(exc).__name__}: {exc}"
    return failed
