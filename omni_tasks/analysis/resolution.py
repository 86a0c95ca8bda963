"""When an open regression alert resolves: a streak of quiet nights (no REGRESSED night, at
least the policy's resolve_nights in a row) whose paired tables, pooled, rule the regression
out.

Ruling out means Δ tail's upper bound (two-sided at the policy's resolve_confidence: 99 %, two
nights at 95 % for multiple choice) lies below the *floor*: the larger of the policy's
min_effect and the smallest Δ one night of this series can call REGRESSED (z(1 − α) · √(ψ/n),
ψ the discordance of noise: twice the smaller of the two discordant counts, which a real step
does not inflate). An alert on a series of 300 questions (ψ ≈ .15) was raised by a drop of
about 5 points or more, or by noise; asking its quiet nights to rule out 2 points kept 86 %
of A/A alerts open past three nights (issue 45). At seed-TTS's 1,088 clips min_effect is the
larger, so a persisting 8 → 10.1 % step still holds its alert open
(bench/bench_statistics_sim.py prints both). Multiple choice resolves on two nights at 95 %:
three at 99 % left 13 % of A/A alerts at 300 and 1,197 questions open after three nights. The
price is at 300 questions, where a real 5-point drop sits at the floor (what such a series can
flag at all) and resolves as often as not; at 1,197 it never does. Seed-TTS keeps three at
99 %: at 95 % a persisting 2.1-point step, just above min_effect, resolved in a fifth of
series.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omni_tasks.analysis.intervals import newcombe_paired
from omni_tasks.analysis.noise import mde
from omni_tasks.analysis.policy import GatePolicy

Table = Sequence[int]  # (both broken, candidate only, baseline only, neither)


@dataclass(frozen=True)
class RuleOut:
    """What a streak's pooled tables show: Δ tail's upper bound against the effect to rule out."""

    high: float  # upper bound of Δ tail, pooled
    floor: float  # max(min_effect, the smallest Δ one night can call REGRESSED)

    @property
    def ruled_out(self) -> bool:
        return self.high < self.floor


def rule_out(
    tables: Sequence[Table], policy: GatePolicy, confidence: float | None = None
) -> RuleOut:
    """The pooled bound (two-sided at `confidence`, default the policy's resolve_confidence)
    and the floor of a streak's paired tables (one per night)."""
    n11, n12, n21, n22 = (sum(int(t[i]) for t in tables) for i in range(4))
    total = n11 + n12 + n21 + n22
    level = policy.resolve_confidence if confidence is None else confidence
    high = newcombe_paired(n11, n12, n21, n22, confidence=level)[2]
    psi = 2 * min(n12, n21) / total if total else 1.0
    # power 0.5: the critical value itself, not the 80 %-power MDE, which at 1,088 clips (2.4
    # points) would let a persisting 2.1-point step resolve and reopen.
    one_night = mde(psi, round(total / max(len(tables), 1)), policy.alpha, 1, power=0.5)
    return RuleOut(high, max(policy.min_effect, one_night))
