"""Find the first bad commit between a good and a bad one: choose clips, verify the endpoints,
then bisect with a sequential test per step, all within a budget counted in clips.

1. **Selection.** The *discriminating* clips are those that differ between one run of each
   endpoint (regressed and improved) plus a seeded control sample of the rest. The runs are the
   endpoints' stored nightly runs when they exist (no GPU spent), else fresh runs at the
   selection seed. Selection only chooses clips, never judges them: judging on the runs that
   chose them would bias the good endpoint's count low on exactly the clips chosen because it
   was fine there, and tilt every step towards "bad".
2. **Endpoint check.** At fresh seeds, both endpoints run on the chosen clips; the paired
   (clip, seed) outcomes pooled over seeds give a one-sided exact McNemar test that the bad
   endpoint is worse. It looks once per seed, α split over the looks; when no look rejects, the
   bisection ends with "no regression between these endpoints" and names no commit.
3. **Steps.** Each midpoint runs on the chosen clips at the same seeds and is judged by a
   binomial sequential probability ratio test between the endpoints' broken rates over every
   seed they have run so far (one seed's counts as the rates made the per-step errors 2–4× the
   nominal on a harder clip model; bench/bench_statistics_sim.py's held-out rows):
   bad when the log-likelihood ratio crosses log((1-β_step)/α_step), good when it crosses
   log(β_step/(1-α_step)), else the next seed, up to the repeat cap; α and β are split over
   the ⌈log2 n⌉ steps (Bonferroni). A step still undecided at the cap (and at the extra seeds
   the budget affords) is decided by the ratio's sign and marked.

The budget is in full-run equivalents (clips run / clips in a full run): the configured one,
raised where the observed step on a small suite needs more seeds on its chosen items than it
buys (chosen_budget: from the run pair's MDE and Δ). The repeat cap is the most seeds whose
worst case (both endpoints and every step's midpoint at each seed) fits what the selection
left of it, at most MAX_REPEATS; a step still undecided there takes up to EXTRA_SEEDS more
while the budget, less what the later steps may need, affords them. When the budget rather
than the evidence ends the check, the result says "undecided, budget spent", not "no
regression". When the chosen clips are too many for one seed (a regression that breaks most
clips, or a small suite), a seeded sample of them (regressed first) sized for MIN_REPEATS seeds
is bisected instead, never none.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from scipy.stats import norm

from omni_tasks.analysis.change_point import step_nights
from omni_tasks.analysis.discriminating import Outcomes, Selection, choose_clips
from omni_tasks.analysis.intervals import mcnemar_exact

Evaluate = Callable[[str, int, tuple[str, ...] | None], dict[str, bool]]  # commit, seed, clips

MAX_REPEATS = 6
MIN_REPEATS = 3  # seeds a step gets when the chosen clips are too many for one and are sampled
MIN_CLIPS = 4  # below this a sample cannot discriminate: the budget is too small
# The most full runs a budget chosen from the observed Δ may reach: a small suite's whole set
# at MIN_REPEATS seeds for 16 commits (2 endpoints + 4 midpoints a seed), plus its selection.
MAX_BUDGET = 24.0
EXTRA_SEEDS = 2  # seeds past the cap a step still undecided may take, while the budget affords


@dataclass(frozen=True)
class EndpointCheck:
    """Fresh runs of both endpoints on the chosen clips: is the bad one worse?"""

    seeds: tuple[int, ...]
    good_broken: tuple[int, ...]  # broken chosen clips per seed
    bad_broken: tuple[int, ...]
    worse: int  # (clip, seed) pairs broken on the bad endpoint only
    better: int  # broken on the good endpoint only
    p_worse: float  # one-sided exact McNemar, pooled over the seeds
    alpha_per_look: float
    verified: bool

    def describe(self) -> str:
        return (
            f"endpoint check at seeds {list(self.seeds)}: good broken {list(self.good_broken)}, "
            f"bad broken {list(self.bad_broken)}; worse:better {self.worse}:{self.better}, "
            f"p {self.p_worse:.2g} (needs < {self.alpha_per_look:.2g}): "
            + ("the bad endpoint is worse" if self.verified else "not shown worse")
        )


@dataclass(frozen=True)
class BisectStep:
    commit: str
    index: int
    seeds: tuple[int, ...]
    broken: tuple[int, ...]  # broken discriminating clips per seed
    n_clips: int
    llr: float
    decision: str  # "bad" | "good"
    forced: bool  # still undecided at the repeat cap


@dataclass(frozen=True)
class BisectResult:
    first_bad: str | None  # None: no regression shown between the endpoints
    last_good: str | None
    steps: list[BisectStep]
    discriminating: tuple[str, ...]
    regressed: int
    improved: int
    evaluations: int  # benchmark runs
    clips_run: int
    n_clips: int  # clips in a full run
    selection: str  # "stored runs" | "fresh runs"
    endpoints: EndpointCheck | None
    repeat_cap: int
    budget: float  # full runs this bisection ran on (chosen_budget)
    notes: list[str] = field(default_factory=list)

    @property
    def full_runs(self) -> float:
        """GPU cost in full-run equivalents."""
        return self.clips_run / self.n_clips if self.n_clips else 0.0


def _clip(p: float) -> float:
    return min(max(p, 0.01), 0.99)


def _llr(k: int, n: int, p_bad: float, p_good: float) -> float:
    pb, pg = _clip(p_bad), _clip(p_good)
    return k * math.log(pb / pg) + (n - k) * math.log((1 - pb) / (1 - pg))


def steps_needed(n_commits: int) -> int:
    return max(1, math.ceil(math.log2(n_commits - 1))) if n_commits > 2 else 1


def chosen_budget(
    budget: float,
    n_all: int,
    n_chosen: int,
    spent: int,
    n_commits: int,
    regressed: int,
    improved: int,
) -> tuple[float, str | None]:
    """The budget a bisection runs on: the configured one, raised (up to MAX_BUDGET) where it
    buys not one seed on the chosen items and its sample is smaller than the observed Δ needs,
    with a note saying so. On the chosen items the run pair shows Δ = (regressed −
    improved)/n_chosen at discordance ψ = (regressed + improved)/n_chosen, so a step needs
    (z/Δ)²·ψ (item, seed) pairs, z = z(1 − .05/steps) + z(.95). On a 40-item suite the default
    4 full runs sampled 8 items at three seeds and ended "no regression" of a +45-point night
    (issue 65: 1 of 9 tries); a 1,088-clip suite's 2.1-point step gets no raise."""
    steps = steps_needed(n_commits)
    per_pair = 2 + steps  # runs of one item at one seed: both endpoints and every midpoint
    if regressed <= improved or n_chosen <= 0 or n_all <= 0:
        return budget, None
    left = budget * n_all - spent
    if left >= per_pair * n_chosen:  # one seed on every chosen item: the cap decides
        return budget, None
    delta, psi = (regressed - improved) / n_chosen, (regressed + improved) / n_chosen
    z = norm.ppf(1 - 0.05 / steps) + norm.ppf(0.95)
    pairs = math.ceil((z / delta) ** 2 * psi)
    if left // per_pair >= pairs or pairs > MAX_REPEATS * n_chosen:
        return budget, None  # the sample suffices, or no budget would show it
    raised = min((spent + per_pair * pairs) / n_all, MAX_BUDGET)
    note = (
        f"budget raised from {budget:g} to {raised:.3g} full runs: a "
        f"{(regressed - improved) / n_all * 100:+.0f}-point step on {n_all} items needs about "
        f"{pairs} (item, seed) pairs a step on its {n_chosen} chosen items"
    )
    return raised, note


def repeat_cap(budget: float, n_clips: int, n_chosen: int, spent: int, n_commits: int) -> int:
    """Seeds per step whose worst case fits the budget (full-run equivalents) after `spent`
    clips: each seed runs both endpoints and at most one midpoint per step on the chosen clips."""
    per_seed = (2 + steps_needed(n_commits)) * max(n_chosen, 1)
    return min(MAX_REPEATS, int((budget * n_clips - spent) // per_seed))


@dataclass
class _Runs:
    """The benchmark runs a bisection spends, counted, and the endpoints' runs on the chosen
    clips per fresh seed, which the check and every step share."""

    evaluate: Evaluate
    history: Sequence[str]
    clips: tuple[str, ...] = ()
    evaluations: int = 0
    clips_run: int = 0
    endpoint: dict[int, tuple[Outcomes, Outcomes]] = field(default_factory=dict)
    limit: float = math.inf  # clips the budget allows in all
    reserve: int = 0  # clips the later steps may still need at the capped seeds

    def affords(self, s: int) -> bool:
        """Whether one more seed of a step (its midpoint, and the endpoints if new at `s`)
        fits the budget after what the later steps may need."""
        runs = 1 if s in self.endpoint else 3
        return self.clips_run + runs * len(self.clips) + self.reserve <= self.limit

    def run(self, commit: str, s: int, clips: tuple[str, ...] | None) -> Outcomes:
        out = self.evaluate(commit, s, clips)
        self.evaluations += 1
        self.clips_run += len(out)
        return out

    def ends_at(self, s: int) -> tuple[int, int]:
        if s not in self.endpoint:
            good, bad = self.history[0], self.history[-1]
            self.endpoint[s] = (self.run(good, s, self.clips), self.run(bad, s, self.clips))
        g, b = self.endpoint[s]
        return sum(g.values()), sum(b.values())

    def step(
        self, mid: int, seeds: list[int], upper: float, lower: float, extra: Sequence[int] = ()
    ) -> BisectStep:
        """The midpoint `mid` judged by the sequential test, one seed at a time, until the log
        likelihood ratio crosses a bound or the seeds run out (forced). Still undecided at the
        capped `seeds` (the endpoints' rates are close), it goes on to the `extra` seeds while
        the budget affords them: at 8 → 10.1 % the forced steps were most wrong first-bads."""
        d = self.clips
        llr, used, counts = 0.0, [], []
        for i, s in enumerate([*seeds, *extra]):  # never a seed that chose the clips
            if i >= len(seeds) and not self.affords(s):
                break
            self.ends_at(s)
            k = sum(self.run(self.history[mid], s, d).values())
            # The endpoints' rates over every seed they ran (the check's too): the test's error
            # rates assume the true rates, and one seed's counts are noisy stand-ins for them.
            g_all = sum(sum(g.values()) for g, _ in self.endpoint.values())
            b_all = sum(sum(b.values()) for _, b in self.endpoint.values())
            size = len(d) * len(self.endpoint)
            llr += _llr(k, len(d), b_all / size, g_all / size)
            used.append(s)
            counts.append(k)
            if llr >= upper or llr <= lower:
                break
        decision = "bad" if llr > 0 else "good"
        forced = lower < llr < upper
        return BisectStep(
            self.history[mid], mid, tuple(used), tuple(counts), len(d), llr, decision, forced
        )


def _fit_to_budget(
    chosen: Selection,
    outcomes: tuple[Outcomes, Outcomes],
    key: str,
    budget: float,
    spent: int,
    n_commits: int,
) -> tuple[tuple[str, ...], int, list[str]]:
    """The clips to bisect, the repeat cap and a note when they were sampled: a wide regression
    (most clips) or a small suite gets fewer clips at more seeds, never no bisection. The sample
    keeps regressed clips first; the rest stay its controls."""
    d, n_all = chosen.clips, chosen.n_common
    cap = repeat_cap(budget, n_all, len(d), spent, n_commits)
    fit = int((budget * n_all - spent) // ((2 + steps_needed(n_commits)) * MIN_REPEATS))
    if cap >= 1 or not chosen.regressed or fit < MIN_CLIPS:
        return d, cap, []
    good, bad = outcomes
    d = fitted(d, {u for u in d if bad[u] and not good[u]}, fit, key)
    note = (
        f"{len(d)} of the {len(chosen.clips)} chosen clips, sampled to fit "
        f"{MIN_REPEATS} seeds a step into the budget"
    )
    return d, repeat_cap(budget, n_all, len(d), spent, n_commits), [note]


def bisect(
    history: Sequence[str],
    evaluate: Evaluate,
    *,
    seed: int = 0,
    alpha: float = 0.05,
    beta: float = 0.05,
    budget: float = 4.0,
    control: int = 50,
    stored: tuple[Outcomes, Outcomes] | None = None,
    used_seeds: frozenset[int] = frozenset(),
) -> BisectResult:
    """`history` runs oldest (known good) to newest (known bad); `stored` is one run of each
    endpoint already on record (good, bad), which chooses the clips instead of fresh runs;
    `used_seeds` are the seeds those runs ran at, which the check and the steps never reuse
    (a check at the seed that chose the clips replays the selection, and confirms it)."""
    if len(history) < 2:
        raise ValueError("bisect needs at least a good and a bad commit")
    runs = _Runs(evaluate, history)
    if stored is not None:
        outcomes, selection = stored, "stored runs"
    else:
        outcomes = (runs.run(history[0], seed, None), runs.run(history[-1], seed, None))
        selection = "fresh runs"
    key = f"bisect|{history[0]}|{history[-1]}|{seed}"
    chosen = choose_clips(*outcomes, key, control)
    budget, raised = chosen_budget(
        budget,
        chosen.n_common,
        len(chosen.clips),
        runs.clips_run,
        len(history),
        chosen.regressed,
        chosen.improved,
    )
    runs.clips, cap, notes = _fit_to_budget(
        chosen, outcomes, key, budget, runs.clips_run, len(history)
    )
    notes = [*([raised] if raised else []), *notes]
    runs.limit = budget * chosen.n_common

    def ended(check: EndpointCheck | None, *why: str) -> BisectResult:
        return BisectResult(
            first_bad=None,
            last_good=None,
            steps=[],
            discriminating=runs.clips,
            regressed=chosen.regressed,
            improved=chosen.improved,
            evaluations=runs.evaluations,
            clips_run=runs.clips_run,
            n_clips=chosen.n_common,
            selection=selection,
            endpoints=check,
            repeat_cap=max(cap, 0),
            budget=budget,
            notes=[*notes, *why],
        )

    if not chosen.regressed:
        return ended(
            None,
            f"no regression between these endpoints: their {selection} differ on no clip "
            "the bad one breaks",
        )
    if cap < 1:
        return ended(
            None,
            f"undecided, budget spent: the budget of {budget:g} full runs does not cover one "
            f"seed of the endpoint check and {steps_needed(len(history))} steps on "
            f"{len(runs.clips)} clips",
        )
    unused = (s for s in itertools.count(seed + 1) if s not in used_seeds)
    fresh = list(itertools.islice(unused, cap))
    extra = list(itertools.islice(unused, EXTRA_SEEDS))
    check = _check_endpoints(runs, fresh, alpha)
    if not check.verified:
        return ended(check, _unverified(check, cap, budget))
    n_steps = steps_needed(len(history))
    # Both errors split over the steps: any wrong step names a wrong commit. With β whole a
    # step (bad called good 0.58 % a step at 8 → 10.1 %), 1.3 % of bisections named a wrong
    # first bad; split, 0.8 % (1,000 histories), at 1.84 full runs instead of 1.62.
    a_step, b_step = alpha / n_steps, beta / n_steps
    upper, lower = math.log((1 - b_step) / a_step), math.log(b_step / (1 - a_step))
    lo, hi = 0, len(history) - 1
    steps: list[BisectStep] = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        missing = sum(s not in runs.endpoint for s in fresh)
        runs.reserve = len(runs.clips) * ((n_steps - len(steps) - 1) * cap + 2 * missing)
        steps.append(runs.step(mid, fresh, upper, lower, extra))
        if steps[-1].decision == "bad":
            hi = mid
        else:
            lo = mid
    return replace(ended(check), first_bad=history[hi], last_good=history[lo], steps=steps)


def _unverified(check: EndpointCheck, cap: int, budget: float) -> str:
    """Why no commit is named after the check: the evidence (the bad endpoint not worse on
    the fresh runs), or the budget: its z, projected to the MAX_REPEATS seeds a larger budget
    would buy (√ of the seeds' ratio), would have verified it."""
    pairs = check.worse + check.better
    z = (check.worse - check.better) / math.sqrt(pairs) if pairs else 0.0
    projected = z * math.sqrt(MAX_REPEATS / len(check.seeds))
    if cap < MAX_REPEATS and projected >= norm.ppf(1 - check.alpha_per_look * cap / MAX_REPEATS):
        return (
            f"undecided, budget spent: fresh runs on the chosen clips show the bad endpoint "
            f"worse ({check.worse}:{check.better}, p {check.p_worse:.2g}) but not beyond "
            f"{check.alpha_per_look:.2g} within {len(check.seeds)} seeds, all that {budget:g} "
            "full runs buy; a larger budget may name the commit"
        )
    return (
        "no regression between these endpoints: fresh runs on the chosen clips do not show "
        "the bad endpoint worse than the good one, so no commit is named"
    )


def fitted(clips: tuple[str, ...], regressed: set[str], size: int, key: str) -> tuple[str, ...]:
    """`size` of the chosen clips, seeded by `key`: regressed clips up to half of it (more when
    there are too few others), the rest from the others."""
    rng = random.Random(key + "|fit")
    reg = [u for u in clips if u in regressed]
    other = [u for u in clips if u not in regressed]
    n_reg = min(len(reg), max(size // 2, size - len(other)))
    picked = rng.sample(reg, n_reg) + rng.sample(other, min(len(other), size - n_reg))
    return tuple(sorted(picked))


def _check_endpoints(runs: _Runs, seeds: list[int], alpha: float) -> EndpointCheck:
    a_look = alpha / len(seeds)
    worse = better = 0
    counts: dict[int, tuple[int, int]] = {}  # seed -> broken chosen clips (good, bad)
    p = 1.0
    for s in seeds:
        counts[s] = runs.ends_at(s)
        g, b = runs.endpoint[s]
        worse += sum(b[u] and not g[u] for u in g)
        better += sum(g[u] and not b[u] for u in g)
        p = mcnemar_exact(worse, better)[0]
        if p < a_look:
            break
    goods, bads = zip(*counts.values(), strict=True)
    return EndpointCheck(tuple(counts), goods, bads, worse, better, p, a_look, p < a_look)


RANGE_WINDOW_DAYS = 42  # how far before the alert's night the step is looked for: at 300
# questions a 5-point step can take four weeks to confirm (bench_statistics_sim)


@dataclass(frozen=True)
class NightEvidence:
    """One stored night of a series, as the auto-bisect range reads it."""

    nightly: dt.date
    verdict: str
    commit_sha: str | None
    table: tuple[int, int, int, int] | None  # paired (n11, n12, n21, n22); None: a group night
    vllm: str | None = None  # the candidate's vLLM build (or version) that night


@dataclass(frozen=True)
class NightRange:
    """The auto-bisect range: the candidate's last night before every plausible step and the
    first night after all of them (analysis/change_point.py), and how many nights were fitted."""

    last_good: NightEvidence | None  # None: the step may precede the window
    first_bad: NightEvidence | None  # None: no REGRESSED night to bisect
    fitted: int = 0


def bisect_range(
    nights: Sequence[NightEvidence], window_days: int = RANGE_WINDOW_DAYS
) -> NightRange:
    """The range for the newest REGRESSED night of the newest-first `nights`: a single step's
    change-point confidence set (analysis/change_point.py) over the nights with a paired table
    in the `window_days` up to it (INFRA nights and run-group nights, which store no table, are
    left out). The first bad night is the latest night the step could have entered on, the
    last good one the night before the earliest; each moves to the nearest night with a commit
    outside the set. The oldest night fitted can start the range: when the step came before
    it, the bisection's endpoint check finds the endpoints alike and names no commit."""
    newest = next((n for n in nights if n.verdict == "REGRESSED"), None)
    if newest is None:
        return NightRange(None, None)
    oldest = newest.nightly - dt.timedelta(days=window_days)
    fitted = [
        n
        for n in reversed(nights)
        if oldest <= n.nightly <= newest.nightly and n.table is not None and n.verdict != "INFRA"
    ]
    if len(fitted) < 2:  # nothing before it, or a run-group series (no tables): no range
        return NightRange(None, newest if newest.commit_sha else None, len(fitted))
    found = step_nights([n.table for n in fitted if n.table is not None])
    first_bad = next((n for n in fitted[found.latest :] if n.commit_sha), None)
    last_good = next((n for n in reversed(fitted[: found.earliest]) if n.commit_sha), None)
    return NightRange(last_good, first_bad, len(fitted))
