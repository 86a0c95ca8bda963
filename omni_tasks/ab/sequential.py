"""The on-demand A/B's decision rule (pure): one full paired round, then repeats on the
discriminating items while the answer is UNKNOWN and the budget allows.

- Round 0 runs every item on both sides and is decided by the nightly's paired test
  (McNemar, min effect, equivalence margin) at α/2.
- The discriminating items are those broken on either side in round 0; every other item was
  fine on both. Repeats run only those, with new seeds, and are decided by the exact
  within-item permutation test on the repeats alone (never on round 0, which chose the
  items: reusing it biases the counts), its Δ scaled back to the whole set. Each repeat
  look spends an equal share of the other α/2 over the most looks the budget allows, so the
  whole A/B's chance of a false REGRESSED stays under α however many looks it takes.
- It stops at REGRESSED / IMPROVED / SAME, at INFRA, or when the next repeat would pass the
  budget (UNKNOWN, with the clips another decision would need)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy.stats import norm

from omni_tasks.analysis.gate import Evidence, Verdict, decide_night
from omni_tasks.analysis.groups import compare_groups
from omni_tasks.analysis.paired import paired_figures
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.night.gate import paired_evidence

MAX_REPEATS = 8  # beyond this many looks an answer is not worth the GPU hours


@dataclass(frozen=True)
class Look:
    round: int
    verdict: str
    evidence: Evidence
    alpha: float
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    """What the A/B does after round 0: which items it repeats and how many looks it has."""

    items: np.ndarray  # indices of the discriminating items
    looks: int  # repeat looks the budget allows (0: none)
    alpha_each: float


def first_look(base: np.ndarray, head: np.ndarray, policy: GatePolicy) -> Look:
    """Round 0: `base`/`head` are 0/1 broken flags of the same items, paired."""
    both = int(((head == 1) & (base == 1)).sum())
    b = int(((head == 1) & (base == 0)).sum())
    c = int(((head == 0) & (base == 1)).sum())
    table = paired_figures(both, b, c, len(base) - both - b - c)
    return _look(0, paired_evidence(table), policy.alpha / 2, policy)


def plan_repeats(
    base: np.ndarray, head: np.ndarray, spent: int, budget: int, policy: GatePolicy
) -> Plan:
    """The repeats round 0 leaves room for: its discriminating items, and as many looks as
    `budget` (clips, both sides) allows after `spent`, at most MAX_REPEATS."""
    items = np.flatnonzero((base == 1) | (head == 1))
    per_look = 2 * len(items)
    looks = 0 if per_look == 0 else min(MAX_REPEATS, max(0, (budget - spent) // per_look))
    return Plan(items, int(looks), (policy.alpha / 2) / looks if looks else 0.0)


def repeat_look(
    base: np.ndarray, head: np.ndarray, n_items: int, plan: Plan, policy: GatePolicy
) -> Look:
    """A repeat look: `base`/`head` are (discriminating items × repeats) broken flags from the
    repeats only; `n_items` the whole set, to which Δ is scaled (items outside the set were
    fine on both sides and count as unchanged)."""
    test = compare_groups(base, head)
    scale = len(plan.items) / n_items if n_items else 0.0
    per_item = head.mean(axis=1) - base.mean(axis=1)
    lo, hi = test.delta_ci
    ev = Evidence(
        n_paired=n_items,
        regressed=int((per_item > 0).sum()),
        improved=int((per_item < 0).sum()),
        p_regress=test.p_regress,
        p_improve=test.p_improve,
        delta_tail=test.delta_broken_rate * scale,
        delta_tail_ci=(lo * scale, hi * scale),
        delta_exact=test.delta_exact * Fraction(len(plan.items), n_items) if n_items else None,
    )
    return _look(base.shape[1], ev, plan.alpha_each, policy)


def _look(round_: int, ev: Evidence, alpha: float, policy: GatePolicy) -> Look:
    v: Verdict = decide_night([ev], policy.model_copy(update={"alpha": alpha}))[0]
    return Look(round_, v.verdict, ev, alpha, list(v.reasons))


def clips_needed(look: Look, plan: Plan, policy: GatePolicy) -> int:
    """About how many more clips (both sides) a decision would take at the current rate of
    evidence: repeats until the interval fits the margin (SAME) or the test is significant."""
    per_look = max(2 * len(plan.items), 2)
    ev = look.evidence
    lo, hi = ev.delta_tail_ci
    half = max((hi - lo) / 2, 1e-9)
    repeats = max(look.round, 1)
    margin = max(policy.same_margin, 1e-9)
    gap = margin - abs(ev.delta_tail)
    if gap > 0:  # SAME once the half-width shrinks under the gap
        wanted = repeats * (half / gap) ** 2
    else:  # REGRESSED/IMPROVED once the estimate stands z(α) standard errors from 0
        se = half / float(norm.ppf(0.975))
        z_now = abs(ev.delta_tail) / se if se else 0.0
        z_need = float(norm.ppf(1 - max(plan.alpha_each, policy.alpha / (2 * MAX_REPEATS))))
        wanted = repeats * (z_need / max(z_now, 1e-3)) ** 2
    return int(math.ceil(max(wanted - repeats, 1.0)) * per_look)
