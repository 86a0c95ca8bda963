"""The night's gate, pure: the series' runs paired (candidate branch × variant against the
baseline), each pair's evidence (a paired comparison, or the run-group test when seeds are
repeated), Holm over the night, the decisions, and confirmation along each key's history.
Statistics not stored yet are computed here and handed to the write with the rest."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import JsonValue

from omni_tasks import benchmarks
from omni_tasks.analysis import gate as rules
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
from omni_tasks.analysis.rerun import same_morning
from omni_tasks.analysis.run_stats import run_stats
from omni_tasks.contracts import (
    Comparison,
    Decision,
    JsonObject,
    PairedFigures,
    RegressedItem,
    RunStats,
)
from omni_tasks.contracts.night import (
    Confirmation,
    GradedRun,
    KeyNight,
    NightDecisionRow,
    NightInputs,
    NightKey,
    StoredComparison,
    night_key,
)
from omni_tasks.formatting import pct
from omni_tasks.night import history as night_history
from omni_tasks.records import commonest_failure

TOP_REGRESSED = 5
SUMMARY_ONLY_REASON = (
    "summary-only (no per-clip rows): the gate needs per-clip rows; the nightly writes them "
    "with --seed-tts-wer-save-items --save-detailed"
)


# ---------------------------------------------------------------- statistics, pure
@dataclass
class Stats:
    """Statistics of the night's gradings: those stored, and those computed now (to store)."""

    stored: dict[int, RunStats]
    computed: list[tuple[int, float, str, RunStats]] = field(default_factory=list)

    def of(self, g: GradedRun, tau: float, policy: GatePolicy) -> RunStats:
        """`ensure_stats` without the store: the stored statistics, else computed once."""
        found = self.stored.get(g.grading_id)
        if found is None:
            found = run_statistics(g, tau)
            self.stored[g.grading_id] = found
            self.computed.append((g.grading_id, tau, policy.policy_version, found))
        return found.of(g.run.run_key, g.run.branch, g.run.benchmark, g.grader_id)


def run_statistics(g: GradedRun, tau: float) -> RunStats:
    """One grading's statistics at τ, as its benchmark summarizes and diagnoses them."""
    bench = benchmarks.get(g.run.benchmark)
    return run_stats(g.clips, tau, g.run.n_expected, bench.official_summary, bench.diagnoses)


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


def comparison(
    baseline: GradedRun,
    candidate: GradedRun,
    base_stats: RunStats,
    cand_stats: RunStats,
    tau: float,
    policy: GatePolicy,
    *,
    force: bool = False,
) -> tuple[Comparison, JsonObject]:
    """The paired comparison of two gradings with its single-comparison verdict (m = 1), and
    the columns the store keeps it under."""
    comparable, mismatch, warnings = comparability(baseline.meta, candidate.meta)
    table = paired_table(baseline.clips, candidate.clips, tau)
    infra = run_infra_reasons("baseline", baseline, base_stats, policy)
    infra += run_infra_reasons("candidate", candidate, cand_stats, policy)
    if not comparable and not force:
        infra += [f"not comparable: {r}" for r in mismatch]
    elif not comparable:
        warnings += [f"forced despite: {r}" for r in mismatch]
    verdict = rules.decide_night([paired_evidence(table, tuple(infra))], policy)[0]
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
    cand_wer, base_wer = cand_stats.mean_wer, base_stats.mean_wer
    result = Comparison(
        **figures,
        tau=tau,
        delta_mean_wer=None if cand_wer is None or base_wer is None else cand_wer - base_wer,
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
    columns: JsonObject = {
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
    }
    return result, columns


def paired_evidence(
    t: PairedFigures, infra: tuple[str, ...] = (), notes: tuple[str, ...] = ()
) -> rules.Evidence:
    """What one paired table (one run a side) contributes to the gate."""
    return rules.Evidence(
        n_paired=t.n_paired,
        regressed=t.regressed,
        improved=t.improved,
        p_regress=t.mcnemar_p,
        p_improve=t.mcnemar_p_improve,
        delta_tail=t.delta_tail_fraction,
        delta_tail_ci=t.delta_tail_fraction_ci,
        infra_reasons=infra,
        notes=notes,
    )


# ---------------------------------------------------------------- pairings and evidence
@dataclass
class Pairing:
    candidate_branch: str
    variant: str
    baseline_branch: str
    candidates: list[str]  # run keys
    baselines: list[str]


@dataclass(frozen=True)
class Detail:
    """What a pairing's evidence came from, stored with its decision."""

    comparison: Comparison | None = None  # one seed a side: the paired comparison
    columns: JsonObject | None = None  # …and its stored columns
    candidate_run_id: int | None = None
    baseline_run_id: int | None = None
    group_test: JsonObject | None = None  # seeds on either side: the run-group test


def pairings(inputs: NightInputs) -> list[Pairing]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in inputs.runs:
        groups[(r.branch, r.variant)].append(r.run_key)
    base_branch, expect = inputs.baseline_branch, inputs.expect
    out = []
    for (branch, variant), runs in sorted(groups.items()):
        # The baseline branch's run is the baseline, of its variant too where the branch has
        # no default run (a TTS model's series speaks only audio-speech).
        if branch == base_branch and (variant == "default" or (branch, "default") not in groups):
            continue
        base = groups.get((base_branch, variant)) if branch != base_branch else None
        base = base or groups.get((base_branch, "default"), [])
        out.append(Pairing(branch, variant, base_branch, runs, base))
    present = {b for b, _ in groups}
    for branch in expect:
        if branch not in present and branch != base_branch:
            default = groups.get((base_branch, "default"), [])
            out.append(Pairing(branch, "default", base_branch, [], default))
    if base_branch in expect and (base_branch, "default") not in groups:
        # Every candidate is INFRA when the baseline itself has no run that night.
        for p in out:
            p.baselines = []
        if not out:
            out.append(Pairing(base_branch, "default", base_branch, [], []))
    return out


def evidence(
    inputs: NightInputs, p: Pairing, policy: GatePolicy, stats: Stats
) -> tuple[rules.Evidence, Detail]:
    tau = policy.primary_tau
    if not p.candidates:
        why = f"no run for {p.candidate_branch} ({p.variant}) that night"
        return rules.Evidence(infra_reasons=(why,)), Detail()
    if not p.baselines:
        why = f"no baseline run for {p.baseline_branch} that night"
        return rules.Evidence(infra_reasons=(why,)), Detail()
    rows = {r.run_key: r for r in inputs.runs}
    ungraded = [rows[k] for k in p.candidates + p.baselines if rows[k].grading_id is None]
    if ungraded:
        return rules.Evidence(
            infra_reasons=tuple(
                f"run {r.run_key} is {SUMMARY_ONLY_REASON}"
                if r.status == "summary_only"
                else f"run {r.run_key} has no grading"
                for r in ungraded
            )
        ), Detail()
    cands, cand_notes = _distinct([inputs.graded[k] for k in p.candidates], tau)
    bases, base_notes = _distinct([inputs.graded[k] for k in p.baselines], tau)
    notes = tuple(base_notes + cand_notes)
    if len(cands) == 1 and len(bases) == 1:
        b, c = bases[0], cands[0]
        res, columns = comparison(
            b, c, stats.of(b, tau, policy), stats.of(c, tau, policy), tau, policy
        )
        # A figure JSON cannot hold (a WER near the float limit makes an infinite mean) would
        # fail the night's one write: it is this pair's INFRA instead (ValueError, below).
        json.dumps(res.to_json(), allow_nan=False)
        infra = tuple(res.reasons) if res.verdict == "INFRA" else ()
        detail = Detail(res, columns, c.run.run_id, b.run.run_id)
        return paired_evidence(res, infra, notes), detail
    ev, detail = _group_evidence(bases, cands, policy, stats)
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
    bases: list[GradedRun], cands: list[GradedRun], policy: GatePolicy, stats: Stats
) -> tuple[rules.Evidence, Detail]:
    tau = policy.primary_tau
    infra: list[str] = []
    for b in bases:
        for c in cands:
            infra += [f"not comparable: {r}" for r in comparability(b.meta, c.meta)[1]]
    for side, group in (("baseline", bases), ("candidate", cands)):
        for g in group:
            infra += run_infra_reasons(side, g, stats.of(g, tau, policy), policy)
    _, mat = broken_matrix([g.clips for g in bases + cands], tau)
    mat_base, mat_cand = mat[:, : len(bases)], mat[:, len(bases) :]
    test = compare_groups(mat_base, mat_cand)
    per_clip = mat_cand.mean(axis=1) - mat_base.mean(axis=1)
    ev = rules.Evidence(
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
        "runs": [g.run.run_key for g in bases + cands],
        "mean_broken": [float(x) for x in np.atleast_1d(mat.mean(0))],
    }
    return ev, Detail(
        candidate_run_id=cands[0].run.run_id,
        baseline_run_id=bases[0].run.run_id,
        group_test=group_test,
    )


def _with_sim(
    inputs: NightInputs, p: Pairing, v: rules.Verdict, margin: float, alpha: float
) -> rules.Verdict:
    """The tail's verdict combined with the paired SIM test (first seed of each side)."""
    if v.verdict == "INFRA" or not p.candidates or not p.baselines:
        return v
    base, cand = inputs.graded[p.baselines[0]], inputs.graded[p.candidates[0]]
    return similarity.combine(v, similarity.sim_test(base.clips, cand.clips, margin), alpha)


# ---------------------------------------------------------------- decisions
@dataclass(frozen=True)
class Gated:
    """The gate's part of the outcome."""

    decisions: list[NightDecisionRow]
    stats: list[tuple[int, float, str, RunStats]]
    confirmations: list[Confirmation]
    nights: list[KeyNight]  # the window's decisions as they stand after tonight


def gate(inputs: NightInputs, policy: GatePolicy) -> Gated:
    """Decide every candidate (branch × variant) of the night against the baseline branch,
    and confirm along each key's history. Only the series' own runs are paired."""
    stats = Stats(dict(inputs.stats))
    pairs = pairings(inputs)
    found = [_guarded_evidence(inputs, p, policy, stats) for p in pairs]
    evidences = [ev for ev, _ in found]
    verdicts = rules.decide_night(evidences, policy)
    if inputs.sim_margin is not None:  # the series gates speaker similarity too: one verdict
        verdicts = [
            _with_sim(inputs, p, v, inputs.sim_margin, policy.alpha)
            for p, v in zip(pairs, verdicts, strict=True)
        ]
    m = max(sum(1 for e in evidences if not e.infra_reasons), 1)
    rows = [
        _decision(inputs, p, ev, v, d, policy, m)
        for p, (ev, d), v in zip(pairs, found, verdicts, strict=True)
    ]
    nights = _tonight(inputs, rows, m)
    rows, confirmations = _confirm(inputs, rows, nights, policy)
    return Gated(rows, stats.computed, confirmations, nights)


def _guarded_evidence(
    inputs: NightInputs, p: Pairing, policy: GatePolicy, stats: Stats
) -> tuple[rules.Evidence, Detail]:
    """A pair's evidence; one bad pair leaves the rest decidable (its statistics not kept)."""
    computed = len(stats.computed)
    try:
        return evidence(inputs, p, policy, stats)
    except (ValueError, ArithmeticError) as exc:
        for grading, *_ in stats.computed[computed:]:
            stats.stored.pop(grading, None)
        del stats.computed[computed:]
        reason = f"statistics could not be computed: {type(exc).__name__}: {exc}"
        return rules.Evidence(infra_reasons=(reason[:500],)), Detail()


def _decision(
    inputs: NightInputs,
    p: Pairing,
    ev: rules.Evidence,
    v: rules.Verdict,
    detail: Detail,
    policy: GatePolicy,
    m: int,
) -> NightDecisionRow:
    s = inputs.series
    c = detail.comparison
    reported = _reported(c.candidate, policy) if c is not None else {}
    found = (
        None
        if ev.infra_reasons
        else night_history.evidence(inputs, p.baselines, p.candidates, policy)
    )
    v = night_history.lifted(v, found, policy)  # short of McNemar's REGRESSED, the history's
    rerun = inputs.reruns.get((inputs.nightly, p.candidate_branch, p.baseline_branch, p.variant))
    said = [rerun.text()] if rerun and v.verdict == "REGRESSED" else []
    reasons = v.reasons + night_history.reasons(found) + said
    decision = Decision(
        benchmark=s.benchmark,
        model=s.model,
        lane=s.lane,
        nightly=inputs.nightly,
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
        reasons=reasons,
        mde=v.mde,
        same_margin=v.margin,
        reported=reported,
        group_test=detail.group_test,
        history=found,
    )
    return NightDecisionRow(
        decision=decision,
        comparison=None
        if c is None or detail.columns is None
        else StoredComparison(detail.columns, c.to_json()),
        candidate_run_id=detail.candidate_run_id,
        baseline_run_id=detail.baseline_run_id,
        reasons=decision.reasons + [f"{k}: {x}" for k, x in reported.items()],
        policy={**policy.model_dump(), "policy_version": policy.policy_version, "m": m},
    )


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


NEW = -1  # the decision id of a night decided for the first time (the write assigns it)


def _tonight(inputs: NightInputs, rows: list[NightDecisionRow], m: int) -> list[KeyNight]:
    """The window's decisions with tonight's replacing what was stored for their keys, each as
    the store would read it back (its comparison from stored JSON)."""
    nights = {night_key(k): k for k in inputs.history}
    s = inputs.series
    for row in rows:
        d, stored = row.decision, row.comparison
        before = nights.get(night_key(d))
        c = None if stored is None else Comparison.from_json(_as_stored(stored.result))
        cand = None if row.candidate_run_id is None else inputs.run_rows.get(row.candidate_run_id)
        nights[night_key(d)] = KeyNight(
            decision_id=NEW if before is None else before.decision_id,
            benchmark=s.benchmark,
            model=s.model,
            lane=s.lane,
            nightly=d.nightly,
            candidate_branch=d.candidate_branch,
            baseline_branch=d.baseline_branch,
            variant=d.variant,
            verdict=d.verdict,
            confirmed=False,
            mcnemar_p_holm=d.mcnemar_p_holm,
            reasons=row.reasons,
            policy_version=inputs.policy_version,
            comparison=c,
            tau=None if c is None else c.tau,
            candidate_run_id=row.candidate_run_id,
            candidate_run_key=None if cand is None else cand.run_key,
            baseline_run_id=row.baseline_run_id,
            airflow_dag_id=None if cand is None else cand.airflow_dag_id,
            airflow_run_id=None if cand is None else cand.airflow_run_id,
            regressed=0 if c is None else c.regressed,
            improved=0 if c is None else c.improved,
            n_paired=0 if c is None else c.n_paired,
            m=m,
            paired=c is not None,
            table=None if c is None else (c.stable_broken, c.regressed, c.improved, c.stable_ok),
            commit_sha=None if cand is None else cand.commit_sha,
            vllm=None if cand is None else _vllm(cand.stack),
            history=d.history,
        )
    return sorted(nights.values(), key=lambda k: (k.nightly, k.candidate_branch, k.variant))


def _as_stored(doc: JsonValue) -> Any:
    """A JSON document with its objects' keys in jsonb's order (shorter first, then bytewise),
    as a comparison reads once stored: messages list its dicts (mode shifts) in that order."""
    if isinstance(doc, dict):
        order = sorted(doc, key=lambda k: (len(k.encode()), k.encode()))
        return {k: _as_stored(doc[k]) for k in order}
    if isinstance(doc, list):
        return [_as_stored(v) for v in doc]
    return doc


def _vllm(stack: JsonObject) -> str | None:
    found = stack.get("vllm_build") or stack.get("vllm")
    return None if found is None else str(found)


def _confirm(
    inputs: NightInputs, rows: list[NightDecisionRow], nights: list[KeyNight], policy: GatePolicy
) -> tuple[list[NightDecisionRow], list[Confirmation]]:
    """Recompute `confirmed` for tonight and the nights after it that it can change: a
    night's confirmation reads only itself and the `confirm_pool_nights − 1` non-INFRA nights
    before it, each at most `confirm_window_days` after the one before, so the key's decisions
    within that reach either side are all it needs. `nights` is left as after the write."""
    w = dt.timedelta(days=policy.confirm_window_days * (policy.confirm_pool_nights - 1))
    night = inputs.nightly
    flags: dict[NightKey, bool] = {}
    paths: dict[NightKey, list[str]] = {}  # tonight's and later nights': which path confirmed
    for row in rows:
        pair = night_key(row.decision)[1:]
        series = [k for k in nights if k.pair == pair and night - w <= k.nightly <= night + w]
        points = [
            rules.SeriesPoint(
                k.nightly,
                k.verdict,
                k.mcnemar_p_holm,
                k.regressed,
                k.improved,
                k.n_paired,
                k.m,
                k.paired,
                *night_history.noise(k.history),
            )
            for k in series
        ]
        for k, flag in zip(series, rules.confirmations(points, policy), strict=True):
            if k.nightly >= night:  # its own previous night may lie outside the window
                by_history = night_history.confirms(
                    [n for n in nights if n.pair == pair], k, policy
                )
                paths[night_key(k)] = night_history.paths(flag, by_history)
                rerun = inputs.reruns.get(night_key(k))  # …or a same-morning re-run confirms it
                flags[night_key(k)] = (
                    flag or by_history is not None or same_morning(k.verdict, rerun, policy)
                )
    confirmed = [
        dataclasses.replace(
            r,
            decision=dataclasses.replace(
                r.decision,
                confirmed=flags[night_key(r.decision)],
                reasons=r.decision.reasons + paths[night_key(r.decision)],
            ),
            reasons=r.reasons + paths[night_key(r.decision)],
        )
        for r in rows
    ]
    changes = [
        Confirmation(k.decision_id, k.nightly, flags[night_key(k)])
        for k in nights
        if k.nightly > night and flags.get(night_key(k), k.confirmed) != k.confirmed
    ]
    nights[:] = [
        dataclasses.replace(k, confirmed=flags.get(night_key(k), k.confirmed)) for k in nights
    ]
    return confirmed, changes
