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
- **Only where it can confirm.** A re-run of tonight's discordant items carries about one
  night's evidence: against one night's standard error σ of Δ (from the baseline's window, or
  tonight's noise discordance where the history is not usable) a min_effect step is
  min_effect/σ standard errors, so the sign test confirms it at `rerun_alpha` about
  Φ(min_effect/σ − z(1 − rerun_alpha)) of the time. Below `rerun_power` the re-run is not
  spent: at 200 seed-TTS items (σ ≈ 1.8 points, ≈ 17 %) a 2.1-point step alerted in 9 % of
  series within 4 nights, and its re-runs confirmed 12 % of the nights they ran: 0.93 full
  runs per alert, 0.03 without them. 544 items (≈ 42 %) and up re-run as before.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

from scipy.special import betainc
from scipy.stats import norm

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import noise_discordance
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


def night_sigma(
    n12: int, n21: int, n: int, phi: float, h: DecisionHistory | None = None
) -> tuple[float, str]:
    """One paired night's standard error of Δ under noise, and what it rests on. From the
    baseline's window where the night's history evidence is usable (its standard error is
    √(φV(1 + 1/k))/n; the difference of two runs varies 2φV): the size's noise over k nights,
    which tonight's draw of it does not move. Else from tonight's `n12` candidate-only and `n21`
    baseline-only items: √(φ·ψ/n), ψ·n the discordant items noise explains (analysis/
    resolution.py `noise_discordance`; a step does not inflate it)."""
    noise = f", φ {phi:.2f}" if phi > 1.0 else ""
    if h is not None and h.refused is None and h.sd > 0:
        k = h.nights
        return h.sd * math.sqrt(2 * k / (k + 1)), f"the baseline's {k} nights{noise}"
    psi = noise_discordance(n12, n21) / max(n, 1)
    return math.sqrt(max(phi, 1.0) * psi / max(n, 1)), f"tonight's ψ {psi:.3f}{noise}"


def power(sigma: float, policy: GatePolicy) -> float:
    """The chance that a re-run confirms a min_effect step at `rerun_alpha`, in the normal
    approximation: a re-run of tonight's discordant items carries about one night's evidence,
    against one night's standard error `sigma` (`night_sigma`). 1 where there is no noise."""
    if sigma <= 0:
        return 1.0
    return float(norm.sf(norm.isf(policy.rerun_alpha) - policy.min_effect / sigma))


def underpowered(
    candidate_branch: str,
    baseline_branch: str,
    n12: int,
    n21: int,
    n: int,
    phi: float,
    policy: GatePolicy,
    h: DecisionHistory | None = None,
) -> RerunResult | None:
    """The skipped result when the re-run would confirm a min_effect step less than
    `rerun_power` of the time (`power`, `night_sigma`): at that size one re-run cannot tell
    such a step from noise, and its GPU would go to nights it leaves unconfirmed."""
    sigma, basis = night_sigma(n12, n21, n, phi, h)
    chance = power(sigma, policy)
    if chance >= policy.rerun_power:
        return None
    why = (
        f"{n12 + n21} discordant items of {n}: one night's noise is {sigma * 100:.2f} points "
        f"(from {basis}), so a re-run would confirm a {policy.min_effect * 100:.1f}-point "
        f"step (p < {policy.rerun_alpha:g}) only {chance * 100:.0f} % of the time, below "
        f"rerun_power {policy.rerun_power:g}: at this size one re-run cannot tell such a step "
        "from noise"
    )
    return RerunResult(candidate_branch, baseline_branch, n12 + n21, full_runs=0.0, skipped=why)


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
