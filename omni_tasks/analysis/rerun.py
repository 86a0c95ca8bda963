"""Same-morning confirmation (pure): when a night is REGRESSED but not confirmed, the items
the two branches disagreed on tonight run again on both branches at fresh seeds, and only the
new runs are tested, item by item.

- **Discordant, never candidate-only.** Re-running only the candidate's broken items
  confirms deterministic per-prompt differences (a prompt that always breaks on the candidate
  and never on the baseline is no regression of the night's draw) 88 % of the time; the items
  broken on exactly one branch give the baseline the same chance to break again. Items broken
  on both branches tonight are left out: the set stays the same with the branches swapped, so
  the test holds, and they are mostly the suite's hard items, which break on both branches
  whatever changed. At 8 → 10.1 % (1,088 items) the either-broken set costs 0.57 full runs at
  2 seeds, over the budget, where the discordant set costs 0.33 and confirms more often.
- **Fresh seeds**, from a range no nightly uses (RERUN_SEED_BASE and up) and never on record
  for those items, so tonight's draws are not counted twice.
- **A sign test over items.** An item's seeds are not independent pairs (a greedy thinker
  answers one prompt the same way at every seed), so each item is one sign: broken more often
  on the candidate than on the baseline in the new runs, or the reverse; ties drop out. The
  one-sided exact binomial p of the candidate's signs confirms below `rerun_alpha`.
- **Run-level noise.** Items of one run break together when the run as a whole is worse, so
  the signs are not independent either: the counts are shrunk by the series' φ (the same φ
  that widens the nightly z's) before the binomial tail is taken.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from scipy.special import betainc
from scipy.stats import norm

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts import DecisionHistory
from omni_tasks.contracts.rerun import RERUN_SEED_BASE, RerunResult

Outcomes = Mapping[str, bool]  # item → broken


def discordant(baseline: Outcomes, candidate: Outcomes) -> tuple[str, ...]:
    """The items both branches ran tonight that exactly one of them broke, sorted."""
    return tuple(
        sorted(u for u in baseline.keys() & candidate.keys() if baseline[u] != candidate[u])
    )


def fresh_seeds(on_record: Iterable[int], k: int, start: int = RERUN_SEED_BASE) -> tuple[int, ...]:
    """The first `k` seeds from `start` up that no run of these items is on record with."""
    used = set(on_record)
    return tuple(itertools.islice((s for s in itertools.count(start) if s not in used), k))


def cost(items: int, n: int, seeds: int) -> float:
    """Full-run equivalents of re-running `items` of an `n`-item suite at `seeds` seeds on
    both branches."""
    return 2 * seeds * items / n if n else 0.0


def sign_test(
    baseline: Sequence[Outcomes],
    candidate: Sequence[Outcomes],
    items: Sequence[str],
    phi: float = 1.0,
) -> tuple[int, int, float]:
    """(candidate-worse items, baseline-worse items, one-sided p) over the new runs:
    `baseline[i]` and `candidate[i]` are seed i's runs; an item counts at the seeds where both
    branches judged it."""
    worse = better = 0
    for u in items:
        both = [(b[u], c[u]) for b, c in zip(baseline, candidate, strict=True) if u in b and u in c]
        diff = sum(c for _, c in both) - sum(b for b, _ in both)
        worse += diff > 0
        better += diff < 0
    return worse, better, sign_p(worse, better, phi)


def sign_p(worse: int, better: int, phi: float = 1.0) -> float:
    """P(at least `worse` of `worse + better` fair coins), the counts divided by φ (floor 1):
    the exact binomial tail at φ 1, through the regularized incomplete beta function, which
    takes the shrunk counts that are no longer whole."""
    f = max(phi, 1.0)
    if worse == 0:
        return 1.0
    k, n = worse / f, (worse + better) / f
    return float(betainc(k, n - k + 1, 0.5))


def judge(
    candidate_branch: str,
    baseline_branch: str,
    items: Sequence[str],
    seeds: Sequence[int],
    baseline: Sequence[Outcomes],
    candidate: Sequence[Outcomes],
    *,
    n: int,
    alpha: float,
    phi: float = 1.0,
) -> RerunResult:
    """The re-run's result from the new runs (seed i's baseline and candidate outcomes)."""
    worse, better, p = sign_test(baseline, candidate, items, phi)
    return RerunResult(
        candidate_branch,
        baseline_branch,
        len(items),
        tuple(seeds),
        worse,
        better,
        p,
        alpha,
        cost(len(items), n, len(seeds)),
    )


def over_budget(
    candidate_branch: str, baseline_branch: str, items: int, n: int, seeds: int, budget: float
) -> RerunResult | None:
    """The skipped result when re-running `items` would spend more than `budget` full runs."""
    spend = cost(items, n, seeds)
    if spend <= budget:
        return None
    why = (
        f"{items} discordant items of {n} at {seeds} seeds on both branches would cost "
        f"{spend:.2f} full runs, over the {budget:g} budget"
    )
    return RerunResult(candidate_branch, baseline_branch, items, full_runs=0.0, skipped=why)


def disagrees(
    candidate_branch: str, baseline_branch: str, h: DecisionHistory | None, policy: GatePolicy
) -> RerunResult | None:
    """The skipped result when the night's usable history evidence does not agree that it
    regressed (one-sided p not below `rerun_history_p`). McNemar calls a night REGRESSED
    on a lucky-low baseline draw too, which its history does not: without the check such A/A
    nights are most of those re-run, each of which may confirm at `rerun_alpha`."""
    if h is None or h.refused is not None:
        return None
    cut = float(norm.isf(policy.rerun_history_p))
    if h.z >= cut:
        return None
    why = f"the night's history evidence does not agree (z {h.z:.2f} < {cut:.2f})"
    return RerunResult(candidate_branch, baseline_branch, 0, full_runs=0.0, skipped=why)


def same_morning(verdict: str, result: RerunResult | None, policy: GatePolicy) -> bool:
    """Whether a night's stored re-run confirms it: a REGRESSED night whose re-run ran and
    whose sign test's p is below the policy's `rerun_alpha`."""
    return (
        verdict == "REGRESSED"
        and result is not None
        and result.skipped is None
        and result.p_value < policy.rerun_alpha
    )
