"""Find the first bad commit between a good and a bad one, with a sequential test per step.

The endpoints are run on every clip at the selection seed; the *discriminating* clips are
those that differ between them (regressed and improved) plus a seeded control sample of the
rest. Those selection runs only choose clips, never judge them: reusing them would bias the good
endpoint's count low on exactly the clips chosen because it was fine there (selection bias),
and tilt every step towards "bad". Each midpoint is run on the discriminating clips and judged
by a binomial sequential probability ratio test between the two endpoints' broken rates
measured afresh on the same clips at the same (fresh) seed: bad when the log-likelihood ratio
crosses log((1-β)/α_step), good when it crosses log(β/(1-α_step)), otherwise repeated with the
next seed, up to a cap; α is split over the ⌈log2 n⌉ steps (Bonferroni). A step still undecided
at the cap is decided by the sign of the ratio and marked.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Evaluate = Callable[[str, int, tuple[str, ...] | None], dict[str, bool]]  # commit, seed, clips


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
    first_bad: str
    last_good: str
    steps: list[BisectStep]
    discriminating: tuple[str, ...]
    regressed: int
    improved: int
    evaluations: int
    notes: list[str] = field(default_factory=list)


def _clip(p: float) -> float:
    return min(max(p, 0.01), 0.99)


def _llr(k: int, n: int, p_bad: float, p_good: float) -> float:
    pb, pg = _clip(p_bad), _clip(p_good)
    return k * math.log(pb / pg) + (n - k) * math.log((1 - pb) / (1 - pg))


def bisect(
    history: Sequence[str],
    evaluate: Evaluate,
    *,
    seed: int = 0,
    alpha: float = 0.05,
    beta: float = 0.05,
    max_repeats: int = 3,
    control: int = 50,
) -> BisectResult:
    """`history` runs oldest (known good) to newest (known bad)."""
    if len(history) < 2:
        raise ValueError("bisect needs at least a good and a bad commit")
    evaluations = 0

    def run(commit: str, s: int, clips: tuple[str, ...] | None) -> dict[str, bool]:
        nonlocal evaluations
        evaluations += 1
        return evaluate(commit, s, clips)

    good_all, bad_all = run(history[0], seed, None), run(history[-1], seed, None)
    common = sorted(set(good_all) & set(bad_all))
    regressed = [u for u in common if bad_all[u] and not good_all[u]]
    improved = [u for u in common if good_all[u] and not bad_all[u]]
    rest = [u for u in common if good_all[u] == bad_all[u]]
    rng = random.Random(f"bisect|{history[0]}|{history[-1]}|{seed}")
    d = tuple(sorted(regressed + improved + rng.sample(rest, min(control, len(rest)))))
    notes = []
    if not regressed:
        notes.append("the endpoints do not differ on any clip: nothing to bisect")
    steps_needed = max(1, math.ceil(math.log2(len(history) - 1))) if len(history) > 2 else 1
    a_step = alpha / steps_needed
    upper, lower = math.log((1 - beta) / a_step), math.log(beta / (1 - a_step))
    endpoint: dict[int, tuple[int, int]] = {}  # fresh seed -> (good, bad) broken counts on d

    lo, hi = 0, len(history) - 1
    steps: list[BisectStep] = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        llr, seeds, counts = 0.0, [], []
        for r in range(max_repeats):
            s = seed + 1 + r  # never the selection seed
            if s not in endpoint:
                g, b = run(history[0], s, d), run(history[-1], s, d)
                endpoint[s] = (sum(g.values()), sum(b.values()))
            k = sum(run(history[mid], s, d).values())
            g_k, b_k = endpoint[s]
            llr += _llr(k, len(d), b_k / len(d), g_k / len(d))
            seeds.append(s)
            counts.append(k)
            if llr >= upper or llr <= lower:
                break
        forced = lower < llr < upper
        decision = "bad" if llr > 0 else "good"
        steps.append(
            BisectStep(
                history[mid], mid, tuple(seeds), tuple(counts), len(d), llr, decision, forced
            )
        )
        if decision == "bad":
            hi = mid
        else:
            lo = mid
    return BisectResult(
        history[hi], history[lo], steps, d, len(regressed), len(improved), evaluations, notes
    )
