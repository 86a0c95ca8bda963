"""Statistics against the store: load clip records, compute, store, and return the typed
contracts (RunStats, Comparison, Decision). The CLI and the DAG tasks call these; all
arithmetic lives in the pure modules."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from omni_tasks import benchmarks
from omni_tasks.analysis import gate as gate_rules
from omni_tasks.analysis import similarity
from omni_tasks.analysis.accounting import error_of
from omni_tasks.analysis.groups import (
    broken_matrix,
    compare_groups,
    distinct_runs,
    outcome_fingerprint,
)
from omni_tasks.analysis.paired import comparability, mode_shift, paired_table
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.run_stats import run_stats
from omni_tasks.analysis.trend import ChangePoint, change_points
from omni_tasks.contracts import (
    Comparison,
    Decision,
    JsonObject,
    PairedFigures,
    RegressedItem,
    RunStats,
    SummaryOnlyStats,
)
from omni_tasks.formatting import pct
from omni_tasks.records import ClipRecord, commonest_failure
from omni_tasks.series import Series
from omni_tasks.store import decisions, results
from omni_tasks.store.results import NightlyRun
from omni_tasks.store.runs import StoredRun, clip_records, get_run, latest_grading

TOP_REGRESSED = 5


@dataclasses.dataclass(frozen=True)
class GradedRun:
    run: StoredRun
    grading_id: int
    grader_id: str
    clips: list[ClipRecord]

    @property
    def meta(self) -> dict[str, object]:
        return {**dataclasses.asdict(self.run), "grader_id": self.grader_id}


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
    bench = benchmarks.get(g.run.benchmark)
    stats = run_stats(g.clips, tau, g.run.n_expected, bench.official_summary, bench.diagnoses)
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
SUMMARY_ONLY_REASON = (
    "summary-only (no per-clip rows): the gate needs per-clip rows; the nightly writes them "
    "with --seed-tts-wer-save-items --save-detailed"
)


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
    comparable, mismatch, warnings = comparability(baseline.meta, candidate.meta)
    table = paired_table(baseline.clips, candidate.clips, tau)
    infra = infra_reasons(baseline, candidate, base_stats, cand_stats, policy)
    if not comparable and not force:
        infra += [f"not comparable: {r}" for r in mismatch]
    elif not comparable:
        warnings += [f"forced despite: {r}" for r in mismatch]
    evidence = gate_rules.Evidence(
        n_paired=table.n_paired,
        regressed=table.regressed,
        improved=table.improved,
        p_regress=table.mcnemar_p,
        p_improve=table.mcnemar_p_improve,
        delta_tail=table.delta_tail_fraction,
        delta_tail_ci=table.delta_tail_fraction_ci,
        infra_reasons=tuple(infra),
    )
    verdict = gate_rules.decide_night([evidence], policy)[0]
    base_by_id = {c.utt_id: c for c in baseline.clips}
    cand_by_id = {c.utt_id: c for c in candidate.clips}
    top = [
        RegressedItem(
            utt_id=u,
            reference=cand_by_id[u].reference_text,
            heard=cand_by_id[u].hypothesis,
            wer=error_of(cand_by_id[u]),
            baseline_heard=base_by_id[u].hypothesis,
            baseline_wer=error_of(base_by_id[u]),
            audio_uri=cand_by_id[u].audio_uri,
        )
        for u in table.regressed_clips[:TOP_REGRESSED]
    ]
    figures = {f.name: getattr(table, f.name) for f in dataclasses.fields(PairedFigures)}
    result = Comparison(
        **figures,
        tau=tau,
        delta_mean_wer=_diff(cand_stats.mean_wer, base_stats.mean_wer),
        verdict=verdict.verdict,
        reasons=verdict.reasons,
        warnings=warnings,
        comparable=comparable,
        mde=verdict.mde,
        same_margin=verdict.margin,
        mode_shift=mode_shift(
            baseline.clips,
            candidate.clips,
            tau,
            benchmarks.get(candidate.run.benchmark).diagnoses,
        ),
        top_regressed=top,
        regressed_clips=table.regressed_clips,
        improved_clips=table.improved_clips,
        policy_version=policy.policy_version,
        baseline=base_stats,
        candidate=cand_stats,
    )
    ci = table.delta_tail_fraction_ci
    comparison_id = results.upsert_comparison(
        conn,
        {
            "baseline_grading_id": baseline.grading_id,
            "candidate_grading_id": candidate.grading_id,
            "tau": tau,
            "policy_version": policy.policy_version,
            "comparable": comparable,
            "n_paired": table.n_paired,
            "stable_broken": table.stable_broken,
            "regressed": table.regressed,
            "improved": table.improved,
            "stable_ok": table.stable_ok,
            "p_regress": table.mcnemar_p,
            "p_improve": table.mcnemar_p_improve,
            "delta_tail_fraction": table.delta_tail_fraction,
            "delta_tail_ci_low": ci[0],
            "delta_tail_ci_high": ci[1],
            "delta_capped_mean_wer": table.delta_capped_mean_wer,
        },
        result.to_json(),
    )
    return dataclasses.replace(result, comparison_id=comparison_id)


def compare_keys(
    conn: psycopg.Connection[Any],
    baseline_key: str,
    candidate_key: str,
    tau: float,
    policy: GatePolicy,
    *,
    force: bool = False,
    baseline_grader: str | None = None,
    candidate_grader: str | None = None,
) -> Comparison:
    """Compare two runs, or two gradings of one run (a re-grade against the original)."""
    with conn.transaction():
        return compare(
            conn,
            load_graded_run(conn, baseline_key, baseline_grader),
            load_graded_run(conn, candidate_key, candidate_grader),
            tau,
            policy,
            force=force,
        )


def infra_reasons(
    baseline: GradedRun,
    candidate: GradedRun,
    base_stats: RunStats,
    cand_stats: RunStats,
    policy: GatePolicy,
) -> list[str]:
    return run_infra_reasons("baseline", baseline, base_stats, policy) + run_infra_reasons(
        "candidate", candidate, cand_stats, policy
    )


def run_infra_reasons(side: str, g: GradedRun, stats: RunStats, policy: GatePolicy) -> list[str]:
    """Why one run cannot be gated: not complete, or coverage below the floor."""
    reasons = []
    if g.run.status != "complete":
        why = ""
        failed = commonest_failure(g.clips)
        if failed:  # the commonest reason, and where the requests went: what to go and fix
            reason, n = failed
            target = g.run.config.get("target")
            where = f" (target {target})" if target else ""
            why = f": {n} of {len(g.clips)} items {reason}{where}"
        reasons.append(f"{side} run {g.run.run_key} is {g.run.status}, not complete{why}")
    if stats.coverage < policy.coverage_floor:
        reasons.append(
            f"{side} coverage {pct(stats.coverage)} below the "
            f"{pct(policy.coverage_floor, 0)} floor ({stats.n_infra} infra clips)"
        )
    return reasons


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


# ---------------------------------------------------------------- nightly gate
@dataclasses.dataclass(frozen=True)
class _Detail:
    """What a pairing's evidence came from, stored with its decision."""

    comparison: Comparison | None = None  # one seed a side: the paired comparison
    comparison_id: int | None = None
    candidate_run_id: int | None = None
    baseline_run_id: int | None = None
    group_test: JsonObject | None = None  # seeds on either side: the run-group test


@dataclasses.dataclass
class _Pairing:
    candidate_branch: str
    variant: str
    baseline_branch: str
    candidates: list[NightlyRun]
    baselines: list[NightlyRun]


def gate_nightly(
    conn: psycopg.Connection[Any],
    nightly: dt.date,
    policy: GatePolicy,
    *,
    series: Series,
    baseline_branch: str,
    expect: tuple[str, ...] = (),
    sim_margin: float | None = None,
) -> list[Decision]:
    """Decide every candidate (branch x variant) of a nightly against the baseline branch,
    store the decisions, and refresh confirmation along each key's series. Only the series'
    own runs are paired: another lane or model is never this series' baseline."""
    policy = policy.for_benchmark(series.benchmark)
    with conn.transaction():
        rows = results.nightly_runs(conn, series, nightly)
        pairings = _pairings(rows, baseline_branch, expect)
        evidence, details = [], []
        loaded: dict[str, GradedRun] = {}  # the baseline is shared by every candidate

        def load(run_key: str) -> GradedRun:
            if run_key not in loaded:
                loaded[run_key] = load_graded_run(conn, run_key)
            return loaded[run_key]

        for p in pairings:
            try:
                with conn.transaction():  # a savepoint: one bad pair leaves the rest decidable
                    ev, detail = _evidence(conn, p, policy, load)
            except (ValueError, ArithmeticError, psycopg.DataError) as exc:
                reason = f"statistics could not be computed: {type(exc).__name__}: {exc}"
                ev, detail = gate_rules.Evidence(infra_reasons=(reason[:500],)), _Detail()
            evidence.append(ev)
            details.append(detail)
        verdicts = gate_rules.decide_night(evidence, policy)
        if sim_margin is not None:  # the series gates speaker similarity too: one verdict
            verdicts = [
                _with_sim(p, v, load, sim_margin, policy.alpha)
                for p, v in zip(pairings, verdicts, strict=True)
            ]
        m = max(sum(1 for e in evidence if not e.infra_reasons), 1)
        out = []
        for p, ev, v, detail in zip(pairings, evidence, verdicts, details, strict=True):
            out.append(_store_decision(conn, nightly, series, p, ev, v, detail, policy, m))
        return [
            dataclasses.replace(
                d, confirmed=_refresh_confirmations(conn, series, d, policy)[nightly]
            )
            for d in out
        ]


def _with_sim(
    p: _Pairing,
    v: gate_rules.Verdict,
    load: Callable[[str], GradedRun],
    margin: float,
    alpha: float,
) -> gate_rules.Verdict:
    """The tail's verdict combined with the paired SIM test (first seed of each side)."""
    if v.verdict == "INFRA" or not p.candidates or not p.baselines:
        return v
    base, cand = load(p.baselines[0].run_key), load(p.candidates[0].run_key)
    return similarity.combine(v, similarity.sim_test(base.clips, cand.clips, margin), alpha)


def _pairings(
    rows: list[NightlyRun], baseline_branch: str, expect: tuple[str, ...]
) -> list[_Pairing]:
    groups: dict[tuple[str, str], list[NightlyRun]] = defaultdict(list)
    for r in rows:
        groups[(r.branch, r.variant)].append(r)
    out = []
    for (branch, variant), runs in sorted(groups.items()):
        if (branch, variant) == (baseline_branch, "default"):
            continue
        base = groups.get((baseline_branch, variant)) if branch != baseline_branch else None
        base = base or groups.get((baseline_branch, "default"), [])
        out.append(_Pairing(branch, variant, baseline_branch, runs, base))
    present = {b for b, _ in groups}
    for branch in expect:
        if branch not in present and branch != baseline_branch:
            out.append(
                _Pairing(
                    branch,
                    "default",
                    baseline_branch,
                    [],
                    groups.get((baseline_branch, "default"), []),
                )
            )
    if baseline_branch in expect and (baseline_branch, "default") not in groups:
        # Every candidate is INFRA when the baseline itself has no run that night.
        for p in out:
            p.baselines = []
        if not out:
            out.append(_Pairing(baseline_branch, "default", baseline_branch, [], []))
    return out


def _evidence(
    conn: psycopg.Connection[Any],
    p: _Pairing,
    policy: GatePolicy,
    load: Callable[[str], GradedRun],
) -> tuple[gate_rules.Evidence, _Detail]:
    tau = policy.primary_tau
    if not p.candidates:
        return gate_rules.Evidence(
            infra_reasons=(f"no run for {p.candidate_branch} ({p.variant}) that night",)
        ), _Detail()
    if not p.baselines:
        return gate_rules.Evidence(
            infra_reasons=(f"no baseline run for {p.baseline_branch} that night",)
        ), _Detail()
    ungraded = [r for r in p.candidates + p.baselines if r.grading_id is None]
    if ungraded:
        return gate_rules.Evidence(
            infra_reasons=tuple(
                f"run {r.run_key} is {SUMMARY_ONLY_REASON}"
                if r.status == "summary_only"
                else f"run {r.run_key} has no grading"
                for r in ungraded
            )
        ), _Detail()
    cands, cand_notes = _distinct([load(r.run_key) for r in p.candidates], tau)
    bases, base_notes = _distinct([load(r.run_key) for r in p.baselines], tau)
    notes = tuple(base_notes + cand_notes)
    if len(cands) == 1 and len(bases) == 1:
        res = compare(conn, bases[0], cands[0], tau, policy)
        infra = tuple(res.reasons) if res.verdict == "INFRA" else ()
        return gate_rules.Evidence(
            notes=notes,
            n_paired=res.n_paired,
            regressed=res.regressed,
            improved=res.improved,
            p_regress=res.mcnemar_p,
            p_improve=res.mcnemar_p_improve,
            delta_tail=res.delta_tail_fraction,
            delta_tail_ci=res.delta_tail_fraction_ci,
            infra_reasons=infra,
        ), _Detail(res, res.comparison_id, cands[0].run.run_id, bases[0].run.run_id)
    ev, detail = _group_evidence(conn, bases, cands, policy)
    return dataclasses.replace(ev, notes=notes), detail


def _distinct(group: list[GradedRun], tau: float) -> tuple[list[GradedRun], list[str]]:
    """One side's runs with copies (the same broken items) counted once, and what was
    dropped: the group test must not take one outcome as two independent seeds."""
    kept, copies = distinct_runs([outcome_fingerprint(g.clips, tau) for g in group])
    notes = [
        f"run {group[c].run.run_key} repeats run {group[o].run.run_key}'s broken items "
        "item for item (a copy, or a seed that did not reach the model): counted once"
        for c, o in copies.items()
    ]
    return [group[i] for i in kept], notes


def _group_evidence(
    conn: psycopg.Connection[Any],
    bases: list[GradedRun],
    cands: list[GradedRun],
    policy: GatePolicy,
) -> tuple[gate_rules.Evidence, _Detail]:
    tau = policy.primary_tau
    infra: list[str] = []
    for b in bases:
        for c in cands:
            infra += [f"not comparable: {r}" for r in comparability(b.meta, c.meta)[1]]
    for side, group in (("baseline", bases), ("candidate", cands)):
        for g in group:
            infra += run_infra_reasons(side, g, ensure_stats(conn, g, tau, policy), policy)
    runs = [g.clips for g in bases + cands]
    _, mat = broken_matrix(runs, tau)
    mat_base, mat_cand = mat[:, : len(bases)], mat[:, len(bases) :]
    keys = [g.run.run_key for g in bases + cands]
    test = compare_groups(mat_base, mat_cand)
    per_clip = mat_cand.mean(axis=1) - mat_base.mean(axis=1)
    ev = gate_rules.Evidence(
        n_paired=test.n_clips,
        regressed=int((per_clip > 0).sum()),
        improved=int((per_clip < 0).sum()),
        p_regress=test.p_regress,
        p_improve=test.p_improve,
        delta_tail=test.delta_broken_rate,
        delta_tail_ci=test.delta_ci,
        infra_reasons=tuple(dict.fromkeys(infra)),
        delta_exact=test.delta_exact,
    )
    group_test: JsonObject = {
        **{k: v for k, v in dataclasses.asdict(test).items() if k != "delta_exact"},
        "runs": list(keys),
        "mean_broken": [float(x) for x in np.atleast_1d(mat.mean(0))],
    }
    return ev, _Detail(
        candidate_run_id=cands[0].run.run_id,
        baseline_run_id=bases[0].run.run_id,
        group_test=group_test,
    )


def _store_decision(
    conn: psycopg.Connection[Any],
    nightly: dt.date,
    series: Series,
    p: _Pairing,
    ev: gate_rules.Evidence,
    v: gate_rules.Verdict,
    detail: _Detail,
    policy: GatePolicy,
    m: int,
) -> Decision:
    comparison = detail.comparison
    reported = _reported(comparison.candidate, policy) if comparison is not None else {}
    decision = Decision(
        benchmark=series.benchmark,
        model=series.model,
        lane=series.lane,
        nightly=nightly,
        candidate_branch=p.candidate_branch,
        baseline_branch=p.baseline_branch,
        variant=p.variant,
        verdict=v.verdict,
        confirmed=False,
        mcnemar_p=None if ev.infra_reasons else ev.p_regress,
        mcnemar_p_holm=v.p_regress_holm,
        delta_tail_fraction=ev.delta_tail,
        delta_tail_fraction_ci=ev.delta_tail_ci,
        regressed=ev.regressed,
        improved=ev.improved,
        n_paired=ev.n_paired,
        reasons=v.reasons,
        mde=v.mde,
        same_margin=v.margin,
        reported=reported,
        group_test=detail.group_test,
    )
    decisions.upsert_decision(
        conn,
        {
            **series.args(),
            "nightly": nightly,
            "candidate_branch": p.candidate_branch,
            "baseline_branch": p.baseline_branch,
            "variant": p.variant,
            "policy_version": policy.policy_version,
            "verdict": v.verdict,
            "confirmed": False,
            "mcnemar_p": decision.mcnemar_p,
            "mcnemar_p_holm": v.p_regress_holm,
            "comparison_id": detail.comparison_id,
            "candidate_run_id": detail.candidate_run_id,
            "baseline_run_id": detail.baseline_run_id,
            "reasons": v.reasons + [f"{k}: {x}" for k, x in reported.items()],
            "policy": {**policy.model_dump(), "policy_version": policy.policy_version, "m": m},
        },
    )
    return decision


def _reported(cand: RunStats, policy: GatePolicy) -> dict[str, str]:
    """Figures reported beside the verdict, never alerted on."""
    out = {}
    ci = cand.tail_fraction_ci
    if ci and ci[1] > policy.slo_tail:
        out["slo"] = (
            f"candidate tail Wilson upper bound {ci[1]:.3f} above the {policy.slo_tail:.2f} SLO"
        )
    figure = benchmarks.get(cand.benchmark).legacy_mean_figure if cand.benchmark else None
    legacy = cand.official.get(figure) if figure else None
    if legacy is not None and legacy > policy.legacy_mean_max:
        out["legacy_gate"] = (
            f"harness mean WER {legacy:.4f} above the legacy {policy.legacy_mean_max} gate"
        )
    return out


def _refresh_confirmations(
    conn: psycopg.Connection[Any], series: Series, d: Decision, policy: GatePolicy
) -> dict[dt.date, bool]:
    """Recompute `confirmed` for this night and the nights after it that it can change: a
    night decided late (a backfill) can confirm, or stop confirming, the nights after it. A
    night's confirmation reads only itself and the `confirm_pool_nights − 1` non-INFRA nights
    before it, each at most `confirm_window_days` after the one before, so the key's decisions
    within that reach either side are all it needs: the cost is the window's, not the series'
    history."""
    w = dt.timedelta(days=policy.confirm_window_days * (policy.confirm_pool_nights - 1))
    key = {
        **series.args(),
        "candidate_branch": d.candidate_branch,
        "baseline_branch": d.baseline_branch,
        "variant": d.variant,
        "policy_version": policy.policy_version,
        "first": d.nightly - w,
        "last": d.nightly + w,
    }
    rows = decisions.decision_series(conn, key)
    points = [
        gate_rules.SeriesPoint(
            r["nightly"],
            r["verdict"],
            r["mcnemar_p_holm"],
            r["regressed"],
            r["improved"],
            r["n_paired"],
            r["m"],
            r["paired"],
        )
        for r in rows
    ]
    flags = gate_rules.confirmations(points, policy)
    out = {}
    for r, flag in zip(rows, flags, strict=True):
        if r["nightly"] < d.nightly:
            continue  # its own previous night may lie outside the window: left as it is
        out[r["nightly"]] = flag
        if r["confirmed"] != flag:
            decisions.set_confirmed(conn, r["decision_id"], flag)
    return out


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
    if metric == "official_mean":
        rows = results.series(conn, "official_series", key)
    elif metric == "paired_delta":
        rows = results.series(conn, "paired_delta_series", key)
    else:
        rows = [r for r in results.series(conn, "nightly_series", key) if r[metric] is not None]
    breaks = results.known_breaks(conn, key)
    points = change_points(
        [r["nightly"] for r in rows], [r[metric] for r in rows], known_breaks=breaks
    )
    return rows, points
