"""When an open regression alert resolves: a streak of quiet nights (no REGRESSED night, at
least the policy's resolve_nights in a row) whose paired tables, pooled, rule the regression
out. The rule is chosen from the series' own ψ/n, not per family (issue 65).

Ruling out means Δ tail's upper bound (two-sided at resolve_confidence: McNemar's normal
bound on the pooled discordant counts) lies below the *floor*, the regression the alert
tracks. With σ = √(ψ/(k·n)) the standard error of k = resolve_nights nights of n items pooled
(ψ the noise discordance, which a real step does not inflate), an A/A streak clears a floor F
within k nights with probability about Φ(F/σ − z_c), z_c the bound's z. The floor is

    F = max(min_effect, (z_c + z_aa) · σ),   z_aa = z(resolve_aa_share),

so A/A alerts resolve within k nights at least resolve_aa_share of the time (98 %: an A/A
REGRESSED night, about 1 % a night, restarts the streak) at every size, and a persisting step
at F or above must fall z_c standard errors below itself to clear it. Where the second term is
the larger the series is *gated wider*: its size cannot tell a min_effect step from noise in k
nights, so it tracks only steps of F or more and the alert's thread says so (a smaller
persisting step there may resolve). The per-family rule this replaces (three nights at 99 %,
two at 95 % for multiple choice, floor max(min_effect, one night's critical Δ)) resolved A/A
alerts within 3 nights in only 81.9 % at 200 clips and 86.7 % at 544, and 45.5 % of
persisting 5-point drops at 300 questions (issue 65). bench/bench_statistics_sim.py prints
both figures at every size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import norm

from omni_tasks.analysis.policy import GatePolicy

Table = Sequence[int]  # (both broken, candidate only, baseline only, neither)


@dataclass(frozen=True)
class RuleOut:
    """What a streak's pooled tables show: Δ tail's upper bound against the effect to rule out."""

    high: float  # upper bound of Δ tail, pooled
    floor: float  # the regression the alert tracks (resolution_floor)
    items: int  # items a night (the streak's mean)
    psi: float  # the noise discordance of the streak, pooled
    widened: bool  # the floor is above min_effect: this size cannot track a min_effect step

    @property
    def ruled_out(self) -> bool:
        return self.high < self.floor

    def basis(self, min_effect: float) -> str:
        """Why the floor is what it is, in the thread's words."""
        if not self.widened:
            return "the policy's min_effect"
        return (
            f"wider than min_effect {min_effect * 100:.1f} pts: at {self.items:,} items a night "
            f"(ψ {self.psi:.3f}) quiet nights cannot tell less from noise, so a smaller "
            "persisting step may resolve"
        )


def resolution_floor(psi: float, n: int, policy: GatePolicy) -> float:
    """The regression a series of `n` items at noise discordance `psi` can track: the larger
    of min_effect and the Δ that resolve_nights A/A nights pooled rule out at least
    resolve_aa_share of the time (the module's F)."""
    if n <= 0:
        return 1.0
    z_c = float(norm.ppf(0.5 + policy.resolve_confidence / 2))
    z_aa = float(norm.ppf(policy.resolve_aa_share))
    sigma = math.sqrt(psi / (policy.resolve_nights * n))
    return max(policy.min_effect, (z_c + z_aa) * sigma)


def rule_out(tables: Sequence[Table], policy: GatePolicy) -> RuleOut:
    """The pooled bound (two-sided at the policy's resolve_confidence) and the floor of a
    streak's paired tables (one per night)."""
    n11, n12, n21, n22 = (sum(int(t[i]) for t in tables) for i in range(4))
    total = max(n11 + n12 + n21 + n22, 1)
    # McNemar's normal bound on the pooled discordant counts: the floor's σ is on the same
    # scale, so an A/A streak clears the floor at the share the floor was chosen for (Newcombe's
    # interval is wider at a few dozen discordant items: 89 % of A/A alerts at 200 clips).
    z_c = float(norm.ppf(0.5 + policy.resolve_confidence / 2))
    high = (n12 - n21 + z_c * math.sqrt(n12 + n21)) / total
    # The noise discordance: twice the smaller count, which a step does not inflate, plus what
    # it falls short of b + c by under A/A (E|b − c| = √(2(b + c)/π)); without it the floor
    # at 200 clips sat low and 91 % of A/A streaks cleared it, not 97 %.
    psi = (2 * min(n12, n21) + math.sqrt(2 * (n12 + n21) / math.pi)) / total
    items = round(total / max(len(tables), 1))
    floor = resolution_floor(psi, items, policy)
    return RuleOut(high, floor, items, psi, floor > policy.min_effect)
