"""Same-morning confirmation (the series' `rerun` task, after `decide`): each REGRESSED,
unconfirmed decision of the night re-runs the items exactly one branch broke tonight, on both
branches at the night's commits, at fresh seeds, interleaved (seed by seed, the branches
alternating first) with the same items, concurrency and request as the night; the runs are
stored as trigger `rerun` (never a night's run), the result in `omni.rerun`; then the series'
night is decided again (`decide_series`, idempotent), which reads the stored result
(analysis/rerun.py `same_morning`) and opens the alert when it confirms.

Idempotent: a night with a stored result is not re-run, a stored run is not run again
(its key names the night, pair, branch and seed), and a retry picks the same seeds (the re-run's
own runs are not "on record" to it).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.analysis import rerun
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts.rerun import RerunResult
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.jobs.bisect import outcomes
from omni_tasks.jobs.decide import decide_series, night_question
from omni_tasks.jobs.nightly import night_request, run_on_target
from omni_tasks.store import reruns
from omni_tasks.store.runs import RunNotFoundError


def rerun_series(
    conn: psycopg.Connection[Any],
    series: list[NightlyParams],
    nightly: dt.date,
    policy: GatePolicy,
    *,
    airflow_ids: tuple[str | None, str | None] = (None, None),
) -> list[str]:
    """Re-run and decide again every REGRESSED, unconfirmed decision of one series' night
    (each of its variants); returns a line per decision (none: nothing to do)."""
    lines = []
    for params in series:
        own = policy.for_benchmark(params.bench)
        wanted = reruns.wanted(conn, params.series, nightly, params.variant, own.policy_version)
        stored = reruns.of_window(conn, params.series, nightly, nightly)
        todo = [
            w
            for w in wanted
            if (nightly, w.candidate_branch, w.baseline_branch, params.variant) not in stored
        ]
        for w in todo:
            result, keys = _rerun(conn, params, nightly, w, own, airflow_ids)
            reruns.upsert(conn, params.series, nightly, params.variant, result, keys)
            conn.commit()
            lines.append(f"{params.series.label} {w.candidate_branch}: {result.text()}")
        if todo:
            decide_series(conn, night_question(params, nightly), policy)
    return lines


def _rerun(
    conn: psycopg.Connection[Any],
    params: NightlyParams,
    nightly: dt.date,
    w: reruns.Wanted,
    policy: GatePolicy,
    airflow_ids: tuple[str | None, str | None],
) -> tuple[RerunResult, list[str]]:
    """One decision's re-run: the items, the budget, the power, the seeds, the runs, the sign
    test."""
    evidence = w.evidence
    disagrees = rerun.disagrees(w.candidate_branch, w.baseline_branch, evidence, policy)
    if disagrees is not None:
        return disagrees, []
    tau = policy.primary_tau
    try:
        base = outcomes(conn, w.baseline_run_key, tau)
        cand = outcomes(conn, w.candidate_run_key, tau)
    except RunNotFoundError as exc:
        why = f"tonight's runs have no grading to choose items from ({exc})"
        return RerunResult(w.candidate_branch, w.baseline_branch, 0, skipped=why), []
    items = rerun.discordant(base, cand)
    n = len(base.keys() & cand.keys())
    k = policy.rerun_seeds
    skipped = rerun.over_budget(
        w.candidate_branch, w.baseline_branch, len(items), n, k, policy.rerun_budget
    )
    if skipped is not None:
        return skipped, []
    worse = sum(cand[u] for u in items)  # tonight's candidate-only items; the rest baseline-only
    phi = 1.0 if evidence is None else evidence.phi
    skipped = rerun.underpowered(
        w.candidate_branch, w.baseline_branch, worse, len(items) - worse, n, phi, policy, evidence
    )
    if skipped is not None:
        return skipped, []
    prefix = f"rerun:{params.series.slug}:{nightly}:{params.variant}:{w.candidate_branch}:"
    used = reruns.seeds_on_record(conn, params.series, rerun.RERUN_SEED_BASE, prefix)
    seeds = rerun.fresh_seeds(used, k)
    sides: dict[str, tuple[str | None, list[rerun.Outcomes]]] = {
        w.baseline_branch: (w.baseline_commit, []),
        w.candidate_branch: (w.candidate_commit, []),
    }
    keys = []
    for i, seed in enumerate(seeds):
        # Interleaved: the branches take turns going first, so neither owns a warmer server.
        order = [w.baseline_branch, w.candidate_branch][:: 1 if i % 2 == 0 else -1]
        for branch in order:
            commit, found = sides[branch]
            key = f"{prefix}{branch}:seed{seed}"
            request = night_request(
                params,
                branch,
                airflow_ids,
                commit=commit,
                seed=seed,
                only=items,
                nightly=nightly,
                trigger="rerun",
                run_key=key,
            )
            keys.append(run_on_target(conn, params, request, params.grader))
            found.append(outcomes(conn, key, tau))
    result = rerun.judge(
        w.candidate_branch,
        w.baseline_branch,
        items,
        seeds,
        sides[w.baseline_branch][1],
        sides[w.candidate_branch][1],
        n=n,
        alpha=policy.rerun_alpha,
        phi=phi,
    )
    return result, keys
