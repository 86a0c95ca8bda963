"""Statistics against the store: load clip records, compute, store, and return the typed
contracts (RunStats, Comparison, Decision). The CLI and the DAG tasks call these; all
arithmetic lives in the pure modules."""

from __future__ import annotations

import dataclasses
from typing import Any

import psycopg

from omni_tasks import benchmarks
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.trend import ChangePoint, change_points
from omni_tasks.contracts import Comparison, RunStats, SummaryOnlyStats
from omni_tasks.contracts.night import GradedRun
from omni_tasks.night.gate import SUMMARY_ONLY_REASON, comparison, run_statistics
from omni_tasks.records import StoredRun
from omni_tasks.series import Series
from omni_tasks.store import results
from omni_tasks.store.runs import clip_records, get_run, latest_grading


def load_graded_run(
    conn: psycopg.Connection[Any], run_key: str, grader_id: str | None = None
) -> GradedRun:
    run = get_run(conn, run_key)
    gid, grader = latest_grading(conn, run.run_id, run_key, grader_id)
    return GradedRun(run, gid, grader, clip_records(conn, gid))


def compute_stats(
    conn: psycopg.Connection[Any], g: GradedRun, tau: float, policy: GatePolicy
) -> RunStats:
    """Compute one grading's statistics and store them (overwriting): the nightly's summarize
    step and `omni-tasks stats`."""
    policy = policy.for_benchmark(g.run.benchmark)
    stats = run_statistics(g, tau)
    results.upsert_run_stats(conn, g.grading_id, tau, policy.policy_version, stats)
    return stats.of(g.run.run_key, g.run.branch, g.run.benchmark, g.grader_id)


def ensure_stats(
    conn: psycopg.Connection[Any], g: GradedRun, tau: float, policy: GatePolicy
) -> RunStats:
    """The statistics stored for this grading, tau and policy; computed (and stored) only when
    none are, so a night's statistics are computed once and read after that."""
    policy = policy.for_benchmark(g.run.benchmark)
    stored = results.stored_stats(conn, g.grading_id, tau, policy.policy_version)
    if stored is None:
        return compute_stats(conn, g, tau, policy)
    return stored.of(g.run.run_key, g.run.branch, g.run.benchmark, g.grader_id)


def compute_stats_for_key(
    conn: psycopg.Connection[Any],
    run_key: str,
    tau: float,
    policy: GatePolicy,
    grader_id: str | None = None,
) -> RunStats | SummaryOnlyStats:
    with conn.transaction():
        run = get_run(conn, run_key)
        if run.status == "summary_only":
            return summary_only_stats(run)
        return compute_stats(conn, load_graded_run(conn, run_key, grader_id), tau, policy)


TREND_METRICS = ("tail_fraction", "capped_mean_wer", "official_mean", "paired_delta")


SUMMARY_ONLY_FAMILY = (
    "summary-only family (its artifact has judge means, no per-item rows): trended and shown, "
    "never paired-gated"
)


def summary_only_stats(run: StoredRun) -> SummaryOnlyStats:
    """A summary-only import as history: its official figures, as the artifact reported them."""
    summary = run.summary
    bench = benchmarks.get(run.benchmark)
    if bench.summary_only_family:  # every figure the artifact reported, per task included
        official, note = dict(summary), SUMMARY_ONLY_FAMILY
    else:
        official, note = {k: summary.get(k) for k in bench.figures}, SUMMARY_ONLY_REASON
    return SummaryOnlyStats(
        run_key=run.run_key,
        branch=run.branch,
        n_expected=run.n_expected,
        official=official,
        note=note,
        benchmark=run.benchmark,
    )


def compare(
    conn: psycopg.Connection[Any],
    baseline: GradedRun,
    candidate: GradedRun,
    tau: float,
    policy: GatePolicy,
    *,
    force: bool = False,
) -> Comparison:
    """Paired comparison, stored keyed by (baseline, candidate, tau, policy version), with a
    single-comparison verdict (m = 1; the nightly gate applies Holm across the night)."""
    policy = policy.for_benchmark(candidate.run.benchmark)
    base_stats = ensure_stats(conn, baseline, tau, policy)
    cand_stats = ensure_stats(conn, candidate, tau, policy)
    result, columns = comparison(
        baseline, candidate, base_stats, cand_stats, tau, policy, force=force
    )
    comparison_id = results.upsert_comparison(conn, columns, result.to_json())
    return dataclasses.replace(result, comparison_id=comparison_id)


def trend(
    conn: psycopg.Connection[Any],
    *,
    series: Series,
    branch: str,
    variant: str,
    metric: str,
    policy: GatePolicy,
    baseline: str = "main",
) -> tuple[list[dict[str, Any]], list[ChangePoint]]:
    """A branch's nightly series of `metric` (from stored run_stats; `official_mean` from the
    harness's figure, summary-only nights included and marked; `paired_delta` the gate's
    paired Δ tail against `baseline`, which a drifting baseline does not move) and its change
    points, with stack/grader/config events as known breaks."""
    policy = policy.for_benchmark(series.benchmark)
    if metric not in TREND_METRICS:
        raise ValueError(f"unknown metric {metric!r}: {' or '.join(TREND_METRICS)}")
    key = {
        **series.args(),
        "branch": branch,
        "variant": variant,
        "tau": policy.primary_tau,
        "policy_version": policy.policy_version,
        "baseline": baseline,
    }
    stored = {"official_mean": "official_series", "paired_delta": "paired_delta_series"}
    if metric in stored:
        rows = results.series(conn, stored[metric], key)
    else:
        rows = [r for r in results.series(conn, "nightly_series", key) if r[metric] is not None]
    breaks = results.known_breaks(conn, key)
    points = change_points(
        [r["nightly"] for r in rows], [r[metric] for r in rows], known_breaks=breaks
    )
    return rows, points
