"""Seeded simulations of the gate and the bisection over the real decision code: the
evidence for their error rates (tests assert them; `bench/bench_statistics_sim.py` reports
them at full size). Research code beside the benches, not the product: nothing in omni_tasks
runs it (scripts here import it as `simlib`, tests as `bench.simlib`).

Clips follow a two-class model fitted to the seed-TTS tail (REFERENCE.md §3-4): a hard set that
usually fails and a large set that rarely does, 8 % broken on average, A/A discordance ψ ≈ 6 %.
Rare events (false confirmation ≈ 1e-4 a night) are simulated as counts, not clips: a night's
paired table is a sum of two multinomials, and only nights that can be REGRESSED go through the
full decision code (no other night can confirm).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from omni_tasks.analysis.ablation import DECIDED, AblationBudget, ablate
from omni_tasks.analysis.bisect import bisect
from omni_tasks.analysis.discriminating import choose_clips
from omni_tasks.analysis.gate import Evidence, SeriesPoint, confirmations, decide_night
from omni_tasks.analysis.groups import compare_groups, distinct_runs
from omni_tasks.analysis.intervals import mcnemar_exact, newcombe_paired
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import rule_out
from omni_tasks.night.history import restarts

N_CLIPS = 1088
HARD_SHARE, HARD_P, EASY_P = 0.075, 0.8, 0.0216


@dataclass(frozen=True)
class ClipModel:
    """Items in classes of (share, probability an item of the class fails on one run), drawn
    independently per run: the fixture every rate here is simulated on, named so that a rate
    says which model it holds on (and how kind that model is: `psi`)."""

    name: str
    classes: tuple[tuple[float, float], ...]

    def counts(self, n: int) -> list[int]:
        """Items per class at suite size `n` (the last class takes the rounding)."""
        head = [int(share * n) for share, _ in self.classes[:-1]]
        return [*head, n - sum(head)]

    def probabilities(self, n: int) -> np.ndarray:
        return np.repeat([p for _, p in self.classes], self.counts(n))

    @property
    def psi(self) -> float:
        """The A/A discordant rate: the share of items two runs of one commit disagree on."""
        return sum(share * 2 * p * (1 - p) for share, p in self.classes)

    @property
    def tail(self) -> float:
        return sum(share * p for share, p in self.classes)


# seed-TTS's tail (REFERENCE.md §3-4): a hard set that usually fails and a large set that rarely
# does, 8 % broken on average, ψ ≈ 6 %.
SEED_TTS = ClipModel("seed-TTS", ((HARD_SHARE, HARD_P), (1 - HARD_SHARE, EASY_P)))
# A multiple-choice suite (Daily-Omni, Video-MME): questions always missed, coin flips and
# questions always answered, ≈ 30 % wrong, ψ ≈ .17 (issue 45 quotes .15 at 300 and 1,197).
MULTIPLE_CHOICE = ClipModel("multiple choice", ((0.15, 0.97), (0.30, 0.5), (0.55, 0.01)))


# Not fitted to anything of ours: a harder tail than SEED_TTS (3 % of items that nearly always
# fail, 12 % that fail half the time, the rest rarely; ψ ≈ .087, tail ≈ 10 %), the shape of the
# independent audit's model (issue 45 #5, #9), to show how much kinder SEED_TTS is.
HELD_OUT = ClipModel("held-out", ((0.03, 0.97), (0.12, 0.5), (0.85, 0.015)))


def aa_probabilities(n: int = N_CLIPS, model: ClipModel = SEED_TTS) -> np.ndarray:
    return model.probabilities(n)


def _cells(p: float) -> list[float]:
    """(both broken, candidate only, baseline only, neither) for one clip under A/A."""
    return [p * p, p * (1 - p), (1 - p) * p, (1 - p) * (1 - p)]


def aa_tables(
    rng: np.random.Generator, nights: int, n: int = N_CLIPS, model: ClipModel = SEED_TTS
) -> np.ndarray:
    """(nights x 4) paired tables (n11, n12, n21, n22) of two runs of one commit."""
    out = np.zeros((nights, 4), dtype=np.int64)
    for count, (_, p) in zip(model.counts(n), model.classes, strict=True):
        out += rng.multinomial(count, _cells(p), size=nights)
    return out


def paired_night(
    rng: np.random.Generator, base_p: np.ndarray, head_p: np.ndarray
) -> tuple[int, int, int, int]:
    """One night's paired table (both broken, head only, base only, neither), each clip drawn
    once per side at its failure probability."""
    b = rng.random(base_p.size) < base_p
    h = rng.random(head_p.size) < head_p
    return int((b & h).sum()), int((h & ~b).sum()), int((b & ~h).sum()), int((~b & ~h).sum())


def paired_point(when: dt.date, table: Sequence[int], policy: GatePolicy) -> SeriesPoint:
    n11, n12, n21, n22 = (int(x) for x in table)
    delta, lo, hi = newcombe_paired(n11, n12, n21, n22)
    p_reg, p_imp = mcnemar_exact(n12, n21)
    ev = Evidence(n11 + n12 + n21 + n22, n12, n21, p_reg, p_imp, delta, (lo, hi))
    v = decide_night([ev], policy)[0]
    return SeriesPoint(when, v.verdict, v.p_regress_holm, n12, n21, ev.n_paired)


def group_point(
    when: dt.date,
    rng: np.random.Generator,
    policy: GatePolicy,
    k: int = 2,
    *,
    run_sd: float = 0.0,
    copies: bool = False,
) -> SeriesPoint:
    """A run-group night: k seeds a side, clip by clip, decided by the exact group test. With
    `run_sd` each run's hard-set failure probability moves by a normal draw (run-level noise);
    with `copies` a side's seeds are one run repeated, which the gate counts once
    (groups.distinct_runs), so the night is paired."""
    base_p = aa_probabilities()
    hard = int(HARD_SHARE * base_p.size)

    def side() -> np.ndarray:
        cols = []
        for _ in range(k):
            p = base_p.copy()
            p[:hard] = np.clip(p[:hard] + rng.normal(0.0, run_sd), 0.0, 1.0) if run_sd else p[:hard]
            cols.append(rng.random(p.size) < p)
        if copies:
            cols = [cols[0]] * k
        mat = np.column_stack(cols).astype(np.int64)
        kept, _ = distinct_runs([col.tobytes().hex() for col in mat.T])
        return mat[:, kept]

    base, cand = side(), side()
    if base.shape[1] == 1 and cand.shape[1] == 1:
        b, c = base[:, 0].astype(bool), cand[:, 0].astype(bool)
        table = [(b & c).sum(), (c & ~b).sum(), (b & ~c).sum(), (~b & ~c).sum()]
        return paired_point(when, [int(x) for x in table], policy)
    t = compare_groups(base, cand)
    per_clip = cand.mean(axis=1) - base.mean(axis=1)
    ev = Evidence(
        t.n_clips,
        int((per_clip > 0).sum()),
        int((per_clip < 0).sum()),
        t.p_regress,
        t.p_improve,
        t.delta_broken_rate,
        t.delta_ci,
        delta_exact=t.delta_exact,
    )
    v = decide_night([ev], policy)[0]
    return SeriesPoint(when, v.verdict, v.p_regress_holm, 0, 0, t.n_clips, paired=False)


def group_false_confirmation(
    policy: GatePolicy, nights: int, seed: int, *, run_sd: float = 0.0, copies: bool = False
) -> tuple[int, int]:
    """(REGRESSED, confirmed) among `nights` A/A group nights, each after another group night
    of the same kind (the series a multi-seed lane makes)."""
    rng = np.random.default_rng(seed)
    d1, d2 = dt.date(2027, 1, 1), dt.date(2027, 1, 2)
    regressed = confirmed = 0
    for _ in range(nights):
        point = group_point(d2, rng, policy, run_sd=run_sd, copies=copies)
        if point.verdict != "REGRESSED":
            continue
        regressed += 1
        prev = group_point(d1, rng, policy, run_sd=run_sd, copies=copies)
        confirmed += confirmations([prev, point], policy)[1]
    return regressed, confirmed


@dataclass(frozen=True)
class ConfirmationRate:
    nights: int
    regressed: int  # A/A nights decided REGRESSED
    confirmed: int  # of those, confirmed: false confirmations
    after_group: int  # confirmed nights whose previous night was a group night

    @property
    def rate(self) -> float:
        return self.confirmed / self.nights


def aa_false_confirmation(
    policy: GatePolicy,
    nights: int,
    seed: int,
    group_share: float = 0.5,
    n: int = N_CLIPS,
    model: ClipModel = SEED_TTS,
) -> ConfirmationRate:
    """A/A paired nights of `n` items, each after a previous night that is a group night with
    probability `group_share` and a paired A/A night otherwise, and before that as many paired
    A/A nights as the policy pools; how many are (falsely) confirmed."""
    rng = np.random.default_rng(seed)
    tables = aa_tables(rng, nights, n, model)
    b, c, totals = tables[:, 1], tables[:, 2], tables.sum(axis=1)
    # Necessary for REGRESSED (m = 1, so Holm is the raw p): the rest cannot confirm.
    p = binom.sf(b - 1, b + c, 0.5)
    maybe = np.flatnonzero((p < policy.alpha) & ((b - c) * 50 >= totals))
    start = dt.date(2027, 1, 1)
    before = policy.confirm_pool_nights - 2  # paired nights before the previous one
    d1, d2 = start + dt.timedelta(before), start + dt.timedelta(before + 1)
    regressed = confirmed = after_group = 0
    for i in maybe:
        point = paired_point(d2, tables[i], policy)
        if point.verdict != "REGRESSED":
            continue
        regressed += 1
        group = rng.random() < group_share
        prev = (
            group_point(d1, rng, policy)
            if group
            else paired_point(d1, aa_tables(rng, 1, n, model)[0], policy)
        )
        earlier = [
            paired_point(start + dt.timedelta(k), t, policy)
            for k, t in enumerate(aa_tables(rng, before, n, model))
        ]
        if confirmations([*earlier, prev, point], policy)[-1]:
            confirmed += 1
            after_group += group
    return ConfirmationRate(nights, regressed, confirmed, after_group)


@dataclass(frozen=True)
class BisectErrors:
    histories: int
    wrong_first_bad: int  # named a commit other than the planted one (any, when none is)
    no_regression: int  # ended "no regression between these endpoints"
    good_steps: int
    good_called_bad: int
    bad_steps: int
    bad_called_good: int
    forced_steps: int
    evaluations: int
    full_runs: tuple[float, ...]  # per bisection, in full-run equivalents
    most_steps: int

    def as_dict(self) -> dict[str, float]:
        runs = np.array(self.full_runs)
        return {
            "histories": self.histories,
            "wrong_first_bad_rate": self.wrong_first_bad / self.histories,
            "no_regression_rate": self.no_regression / self.histories,
            "good_called_bad_per_step": self.good_called_bad / max(self.good_steps, 1),
            "bad_called_good_per_step": self.bad_called_good / max(self.bad_steps, 1),
            "undecided_steps": self.forced_steps,
            "evaluations_per_bisect": self.evaluations / self.histories,
            "full_runs_mean": float(runs.mean()),
            "full_runs_p95": float(np.quantile(runs, 0.95)),
            "most_steps": self.most_steps,
        }


STEP_LIFT = 0.5
NIGHTLY_SEED = 10**6  # the seed of an endpoint's stored nightly run in the simulation


def step_probabilities(
    bad_tail: float, n: int = N_CLIPS, model: ClipModel = SEED_TTS
) -> tuple[np.ndarray, np.ndarray]:
    """Good commits at the model's A/A tail; a bad commit raises the failure probability of a
    regressed set of the model's easiest items by STEP_LIFT (so a rerun of the bad commit
    reproduces only about half of one run's regressed clips), the set sized so the bad tail is
    `bad_tail`. A tail the lift cannot reach is a broken server: every item fails with
    probability at least `bad_tail`."""
    good = model.probabilities(n)
    easy = n - model.counts(n)[-1]
    extra = round((bad_tail - float(good.mean())) * n / STEP_LIFT)
    if extra > n - easy:
        return good, np.maximum(good, bad_tail)
    bad = good.copy()
    bad[easy : easy + extra] += STEP_LIFT
    return good, bad


def bisect_errors(
    bad_tail: float | None,
    histories: int,
    seed: int,
    commits: int = 16,
    *,
    stored: bool = True,
    budget: float = 4.0,
    nightly_seeds: tuple[int, ...] = (NIGHTLY_SEED,),
    guard: bool = True,
    model: ClipModel = SEED_TTS,
    n: int = N_CLIPS,
) -> BisectErrors:
    """Bisect `histories` simulated histories of `commits` commits whose first bad commit is
    drawn uniformly (`bad_tail` None: no commit is bad); count wrong answers, per-step errors
    and the cost. With `stored`, the endpoints' nightly runs choose the clips: the nightly ran
    `nightly_seeds`, its newest run chooses, and the bisection starts at the first seed; with
    `guard` it is told the seeds on record (as the job tells it), else not (the old rule, whose
    check reran them)."""
    good_p, bad_p = (
        step_probabilities(bad_tail, n, model) if bad_tail else (aa_probabilities(n, model),) * 2
    )
    rng = np.random.default_rng(seed)
    wrong = none = good_steps = good_bad = bad_steps = bad_good = forced = evaluations = 0
    most = 0
    costs = []
    for h in range(histories):
        first_bad = int(rng.integers(1, commits)) if bad_tail else commits
        history = [f"h{h}c{i:02d}" for i in range(commits)]
        evaluate = _history(history, first_bad, good_p, bad_p, int(rng.integers(2**32)))
        newest = nightly_seeds[-1]
        ends = (
            (evaluate(history[0], newest, None), evaluate(history[-1], newest, None))
            if stored
            else None
        )
        res = bisect(
            history,
            evaluate,
            seed=nightly_seeds[0] if stored else 0,
            stored=ends,
            budget=budget,
            used_seeds=frozenset(nightly_seeds if stored and guard else ()),
        )
        if res.first_bad is None:
            none += 1
        else:
            wrong += first_bad >= commits or res.first_bad != history[first_bad]
        evaluations += res.evaluations
        costs.append(res.full_runs)
        most = max(most, len(res.steps))
        for step in res.steps:
            forced += step.forced
            if step.index < first_bad:
                good_steps += 1
                good_bad += step.decision == "bad"
            else:
                bad_steps += 1
                bad_good += step.decision == "good"
    return BisectErrors(
        histories, wrong, none, good_steps, good_bad, bad_steps, bad_good, forced, evaluations,
        tuple(costs), most,
    )  # fmt: skip


def _history(
    history: list[str], first_bad: int, good_p: np.ndarray, bad_p: np.ndarray, stream: int
) -> Callable[[str, int, tuple[str, ...] | None], dict[str, bool]]:
    """A simulated benchmark of one history: each (commit, seed) run draws every clip once, so
    a run on a subset of clips sees the same outcomes as the full run would."""
    names = [f"u{i:04d}" for i in range(good_p.size)]
    index = {u: i for i, u in enumerate(names)}

    def evaluate(commit: str, s: int, clips: tuple[str, ...] | None) -> dict[str, bool]:
        i = history.index(commit)
        probs = bad_p if i >= first_bad else good_p
        draws = np.random.default_rng([stream, i, s]).random(good_p.size)
        ids = names if clips is None else list(clips)
        idx = np.array([index[u] for u in ids])
        return dict(zip(ids, (draws[idx] < probs[idx]).tolist(), strict=True))

    return evaluate


@dataclass(frozen=True)
class RangeMisses:
    series: int
    opened: int  # series whose alert opened after the culprit
    excluded: int  # of those, ranges that leave the culprit out
    no_range: int  # the step may precede every night fitted
    widths: tuple[int, ...] = ()  # nights from last good to first bad, each range

    @property
    def excluded_rate(self) -> float:
        return self.excluded / max(self.opened, 1)

    @property
    def holds_rate(self) -> float:
        return (self.opened - self.excluded - self.no_range) / max(self.opened, 1)

    def width(self, q: float) -> int:
        return int(np.quantile(np.array(self.widths), q, method="inverted_cdf"))


def range_misses(
    bad_tail: float,
    series: int,
    seed: int,
    policy: GatePolicy,
    *,
    good_nights: int = 20,
    n: int = N_CLIPS,
    model: ClipModel = SEED_TTS,
) -> RangeMisses:
    """Nightly series whose head is commit j on night j, good up to night `good_nights` and
    stepped to `bad_tail` from there (the culprit commit): the alert opens on the first
    confirmed REGRESSED night, the auto-bisect range is chosen from the nights up to it, and
    a range that leaves the culprit out is counted."""
    from omni_tasks.analysis.bisect import NightEvidence, bisect_range

    good_p, bad_p = step_probabilities(bad_tail, n, model)
    rng = np.random.default_rng(seed)
    start = dt.date(2027, 1, 1)
    opened = excluded = no_range = 0
    widths: list[int] = []
    for _ in range(series):
        points: list[SeriesPoint] = []
        nights: list[NightEvidence] = []
        for j in range(good_nights + 30):
            head = bad_p if j >= good_nights else good_p
            table = paired_night(rng, good_p, head)
            when = start + dt.timedelta(days=j)
            points.append(paired_point(when, table, policy))
            nights.append(NightEvidence(when, points[-1].verdict, f"c{j:02d}", table))
            if points[-1].verdict == "REGRESSED" and confirmations(points, policy)[-1]:
                break
        else:
            continue
        if j < good_nights:
            continue  # a false alarm before the culprit: not this simulation's question
        opened += 1
        found = bisect_range(nights[::-1])
        if found.last_good is None or found.first_bad is None:
            no_range += 1
            continue
        lo = int(found.last_good.commit_sha[1:])  # type: ignore[index]
        hi = int(found.first_bad.commit_sha[1:])  # type: ignore[index]
        excluded += not (lo < good_nights <= hi)
        widths.append(hi - lo)
    return RangeMisses(series, opened, excluded, no_range, tuple(widths))


@dataclass(frozen=True)
class ABRates:
    pairs: int
    failure: float  # ended REGRESSED (the check's `failure`)
    success: float  # SAME or IMPROVED
    neutral: float  # UNKNOWN at budget
    clips_mean: float  # clips spent, both sides
    looks_mean: float

    def to_json(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items()}


def ab_rates(
    base_p: np.ndarray, head_p: np.ndarray, pairs: int, budget: int, seed: int, policy: GatePolicy
) -> ABRates:
    """The on-demand A/B's rule (omni_tasks/ab/sequential.py) on `pairs` simulated A/Bs whose
    items break independently with probabilities `base_p` / `head_p` on every run."""
    from omni_tasks.ab.sequential import first_look, plan_repeats, repeat_look

    rng = np.random.default_rng(seed)
    n = len(base_p)
    ends = {"REGRESSED": 0, "SAME": 0, "IMPROVED": 0, "UNKNOWN": 0}
    clips = looks = 0
    for _ in range(pairs):
        base = (rng.random(n) < base_p).astype(np.int64)
        head = (rng.random(n) < head_p).astype(np.int64)
        look, spent = first_look(base, head, policy), 2 * n
        if look.verdict == "UNKNOWN":
            plan = plan_repeats(base, head, spent, budget, policy)
            bp, hp = base_p[plan.items], head_p[plan.items]
            rb = np.empty((len(plan.items), 0), dtype=np.int64)
            rh = rb
            for _ in range(plan.looks):
                rb = np.column_stack([rb, rng.random(len(bp)) < bp]).astype(np.int64)
                rh = np.column_stack([rh, rng.random(len(hp)) < hp]).astype(np.int64)
                spent += 2 * len(plan.items)
                look = repeat_look(rb, rh, n, plan, policy)
                looks += 1
                if look.verdict != "UNKNOWN":
                    break
        ends[look.verdict] = ends.get(look.verdict, 0) + 1
        clips += spent
    return ABRates(
        pairs,
        ends["REGRESSED"] / pairs,
        (ends["SAME"] + ends["IMPROVED"]) / pairs,
        ends["UNKNOWN"] / pairs,
        clips / pairs,
        looks / pairs,
    )


def alert_resolutions(
    bad_tail: float,
    series: int,
    nights: int,
    seed: int,
    policy: GatePolicy,
    n: int = N_CLIPS,
    model: ClipModel = SEED_TTS,
) -> float:
    """The share of `series` (an alert open from night 0) that resolve within `nights` under
    the lifecycle's rule (analysis/resolution.py: at least resolve_nights nights without a
    restart, a REGRESSED night at Holm p < resolve_restart_alpha, whose pooled paired tables
    rule the regression out): with `bad_tail` 0 an A/A pair, else the model's tail against a
    step to `bad_tail` that persists."""
    good = model.probabilities(n)
    base_p, head_p = (good, good) if bad_tail == 0 else step_probabilities(bad_tail, n, model)
    rng = np.random.default_rng(seed)
    resolved = 0
    for _ in range(series):
        quiet: list[tuple[int, int, int, int]] = []
        for _night in range(nights):
            table = paired_night(rng, base_p, head_p)
            point = paired_point(dt.date(2027, 1, 1), table, policy)
            if point.verdict == "REGRESSED" and restarts(point.p_regress_holm, None, False, policy):
                quiet = []  # the alert is touched again: a new quiet streak starts after it
                continue
            quiet.append(table)
            if len(quiet) >= policy.resolve_nights and rule_out(quiet, policy).ruled_out:
                resolved += 1
                break
    return resolved / series


@dataclass(frozen=True)
class DetectionDelays:
    """Nights from a persisting step to its alert: night 1 is the first bad night; a series
    whose alert has not opened after `horizon` nights counts as horizon + 1."""

    delays: tuple[int, ...]
    horizon: int

    def share_by(self, night: int) -> float:
        return sum(d <= night for d in self.delays) / len(self.delays)

    def quantile(self, q: float) -> int:
        return int(np.quantile(np.array(self.delays), q, method="inverted_cdf"))


def detection_delays(
    bad_tail: float,
    series: int,
    seed: int,
    policy: GatePolicy,
    *,
    quiet: int = 3,
    horizon: int = 12,
) -> DetectionDelays:
    """Series of `quiet` A/A nights, then a step from the 8 % tail to `bad_tail` that persists:
    each night decided and confirmed by the gate's own code (decide_night, confirmations) on
    the nights so far; the night the alert opens (a confirmed REGRESSED night)."""
    good_p, bad_p = step_probabilities(bad_tail)
    rng = np.random.default_rng(seed)
    start = dt.date(2027, 1, 1)
    delays = []
    for _ in range(series):
        points: list[SeriesPoint] = []
        delay = horizon + 1
        for j in range(quiet + horizon):
            table = paired_night(rng, good_p, bad_p if j >= quiet else good_p)
            points.append(paired_point(start + dt.timedelta(days=j), table, policy))
            opened = points[-1].verdict == "REGRESSED" and confirmations(points, policy)[-1]
            if j >= quiet and opened:
                delay = j - quiet + 1
                break
        delays.append(delay)
    return DetectionDelays(tuple(delays), horizon)


def pooled_power(
    bad_tail: float, nights: int, p: float, sims: int, seed: int, history: int = 0
) -> float:
    """How often one exact McNemar test of the first `nights` bad nights pooled has p below
    `p` after a step to `bad_tail`: with α = `p` spent on that single look, no rule on the
    nights' paired counts opens more alerts by that night (Neyman-Pearson: the pooled
    likelihood ratio is the sum of the discordant counts), so it bounds the detection delay
    any rule with that false rate can reach. With `history`, only the clips the baseline never
    broke in that many earlier nights are tested: a rule that also reads each clip's history
    (still exact, its clips chosen before the nights it tests)."""
    good_p, bad_p = step_probabilities(bad_tail)
    rng = np.random.default_rng(seed)
    chunks = np.array_split(np.arange(sims), max(1, sims // 2000))
    stable = np.ones((sims, good_p.size), dtype=bool)
    for _ in range(history):
        for chunk in chunks:
            stable[chunk] &= rng.random((chunk.size, good_p.size)) >= good_p
    reg = np.zeros(sims, dtype=np.int64)
    imp = np.zeros(sims, dtype=np.int64)
    for _ in range(nights):
        for chunk in chunks:
            b = rng.random((chunk.size, good_p.size)) < good_p
            h = rng.random((chunk.size, good_p.size)) < bad_p
            reg[chunk] += (h & ~b & stable[chunk]).sum(axis=1)
            imp[chunk] += (b & ~h & stable[chunk]).sum(axis=1)
    return float((binom.sf(reg - 1, reg + imp, 0.5) < p).mean())


# Simulated ablations, each named for what it does to the step's lifted clips: "regression
# gone" takes the lift away, "unchanged" leaves it, "partial" takes it from half of them. The
# shipped four's case: one knob carries the regression.
ONE_KNOB = ("regression gone", "unchanged", "unchanged", "unchanged")
WITH_PARTIAL = ("regression gone", "unchanged", "partial", "unchanged")


@dataclass(frozen=True)
class AblationCosts:
    """Ablations of confirmed nights: how often each verdict is right, how often every verdict
    was reached, and the GPU spent (full-run equivalents)."""

    nights: int
    wrong: int  # verdicts reached that are not the truth
    undecided: int  # nights with a verdict left unclear (or the reference undecided)
    not_reproduced: int
    full_runs: tuple[float, ...]
    seeds: tuple[int, ...]

    def cost(self, q: float) -> float:
        return float(np.quantile(np.array(self.full_runs), q))


def _fresh_runs(
    clips: Sequence[str], arms: dict[str, np.ndarray], stream: int
) -> Callable[[str, int], dict[str, bool]]:
    """An arm's run at a seed on the clips (named u00042 for item 42): each clip drawn at the
    arm's failure probability, the same for the same (arm, seed)."""
    index = np.array([int(u[1:]) for u in clips])
    arm_of = {label: i for i, label in enumerate(arms)}

    def evaluate(label: str, seed: int) -> dict[str, bool]:
        draw = np.random.default_rng([stream, seed, arm_of[label]])
        broken = draw.random(index.size) < arms[label][index]
        return dict(zip(clips, broken.tolist(), strict=True))

    return evaluate


def ablation_costs(
    bad_tail: float,
    nights: int,
    seed: int,
    policy: GatePolicy,
    *,
    truths: Sequence[str] = ONE_KNOB,
    budget: float = 1.0,
    control: int = 25,
    n: int = N_CLIPS,
) -> AblationCosts:
    """`nights` nights of a step to `bad_tail` (the step's lifted clips: step_probabilities),
    each ablated by the job's own sequential code (choose_clips, ablate) with one ablation per
    entry of `truths`, each run drawn afresh at its clips' failure probabilities."""
    good_p, bad_p = step_probabilities(bad_tail, n)
    lifted = np.flatnonzero(bad_p > good_p)
    half = bad_p.copy()
    half[lifted[: lifted.size // 2]] = good_p[lifted[: lifted.size // 2]]
    effect = {"regression gone": good_p, "unchanged": bad_p, "partial": half}
    truth = {f"{i}:{t}": t for i, t in enumerate(truths)}
    arms = {"baseline": good_p, "candidate": bad_p} | {n: effect[t] for n, t in truth.items()}
    rng = np.random.default_rng(seed)
    ids = [f"u{i:05d}" for i in range(n)]
    wrong = undecided = not_reproduced = 0
    costs, seeds = [], []
    for night in range(nights):
        base = rng.random(n) < good_p
        head = rng.random(n) < bad_p
        chosen = choose_clips(
            dict(zip(ids, base.tolist(), strict=True)),
            dict(zip(ids, head.tolist(), strict=True)),
            f"sim|{seed}|{night}",
            control,
            with_improved=False,
        )
        out = ablate(
            list(truth),
            _fresh_runs(chosen.clips, arms, int(rng.integers(2**32))),
            seed=1,
            budget=AblationBudget(budget, n, len(chosen.clips), 2 + len(truth)),
            alpha=policy.alpha,
            min_effect=policy.min_effect,
        )
        costs.append(out.full_runs)
        seeds.append(len(out.seeds))
        not_reproduced += not out.reference.reproduced
        undecided += not out.decided
        wrong += sum(v.verdict in DECIDED and v.verdict != truth[v.name] for v in out.verdicts)
    return AblationCosts(nights, wrong, undecided, not_reproduced, tuple(costs), tuple(seeds))
