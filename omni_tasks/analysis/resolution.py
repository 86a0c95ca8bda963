"""When an open regression alert resolves: a streak of quiet nights (no REGRESSED night beyond
run-level noise, at least the policy's resolve_nights in a row) whose paired tables, pooled,
rule the regression out. The rule is chosen from the series' own ψ/n and φ, not per family
(issue 65).

Ruling out means Δ tail's upper bound (McNemar's normal bound on the pooled discordant counts,
z_c standard errors above Δ̂) lies below the *floor*, the regression the alert tracks. With
σ = √(φ·ψ/(k·n)) the standard error of k = resolve_nights nights of n items pooled (ψ the noise
discordance, which a real step does not inflate; φ the run-level noise, night/history.py
`noise`: each night's shift adds φ − 1 times the counts' variance) and z_aa the z of
resolve_aa_share, an A/A streak clears a floor F within k nights about Φ(F/σ − z_c) of the
time, so:

- where the streak's nights all carry history evidence (night/history.py: each night's
  candidate against the baseline's per-item history) precise enough, the bound is theirs
  (`against`, `history_z`): the floor is min_effect and z_c as high as A/A streaks can
  afford, so a persisting step just above min_effect (8 → 10.1 % at 1,088 clips) must fall
  far below itself to resolve. McNemar's σ at 1,088 clips left min_effect 4.56 σ up, at the
  edge of both goals (a step resolved within 30 nights in 6.75 % of series, 20.75 % with
  sd-3 run-level noise); the history's 0.34 points put it 5.9 σ up;
- elsewhere (a night without usable history, a short window, 544 clips and fewer), where
  min_effect is at least (z_min + z_aa)·σ (z_min from resolve_confidence_min), the floor
  is min_effect and z_c is z_max (from resolve_confidence);
- elsewhere the series is *gated wider*: its size cannot tell a min_effect step from noise in
  k nights, so the floor is (z_min + z_aa)·σ and the alert's thread says that such a series
  does not hold a persisting step of that size open (refused: the bench measures a step at
  the floor resolving within 30 nights in about half of the series at 200 and 544 clips).
  φ̂ gates a series wider only beyond its own estimation noise (the choice takes φ̂ one
  standard error down): with φ̂ itself, a series without run-level noise was gated wider
  on a noise-high φ̂, and 9 % of 1,088-clip steps resolved, against 6.75 %.

With φ̂ estimated from nights of totals, the z's are Student's t (as analysis/gate.py's
`widened`); φ = 1 (none estimated, or at its floor) keeps the normal. A REGRESSED night beyond
noise (confirmed, by the history, or p widened by φ below α), about 1 % of A/A nights,
restarts a streak, hence resolve_aa_share 98 % for the goal of 95 % within three nights; on
McNemar's raw p, multiple choice's run-level noise (φ ≈ 3.6 at 2,700 questions) restarted so
many A/A streaks that 80 % resolved within 3 nights, not 96.75 %. The per-family rule this
replaces (three nights at 99 %, two at 95 % for multiple choice, floor max(min_effect, one
night's critical Δ)) resolved A/A alerts within 3 nights in only 81.9 % at 200 clips and
86.7 % at 544, and 45.5 % of persisting 5-point drops at 300 questions (issue 65).
bench/bench_statistics_sim.py prints both figures at every size, and its --clip-model bench
with run-level noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import norm
from scipy.stats import t as student_t

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts import DecisionHistory

Table = Sequence[int]  # (both broken, candidate only, baseline only, neither)


@dataclass(frozen=True)
class RuleOut:
    """What a streak's pooled tables show: Δ tail's upper bound against the effect to rule out."""

    high: float  # upper bound of Δ tail, pooled
    floor: float  # the regression the alert tracks (resolution_floor)
    items: int  # items a night (the streak's mean)
    psi: float  # the noise discordance of the streak, pooled
    widened: bool  # the floor is above min_effect: this size cannot track a min_effect step
    phi: float = 1.0  # the run-level noise both the floor's σ and the bound are widened by
    history: bool = False  # the bound is the nights' against the baseline's per-item history

    @property
    def ruled_out(self) -> bool:
        return self.high < self.floor

    def basis(self, min_effect: float) -> str:
        """Why the floor is what it is, in the thread's words."""
        if not self.widened:
            against = ", the nights against the baseline's per-item history" if self.history else ""
            return f"the policy's min_effect{against}"
        noise = f", run-level noise φ {self.phi:.2f}" if self.phi > 1.0 else ""
        return (
            f"wider than min_effect {min_effect * 100:.1f} pts: at {self.items:,} items a night "
            f"(ψ {self.psi:.3f}{noise}) quiet nights cannot rule out less, so this series does "
            "not hold a persisting step of that size open: a smaller persisting step may resolve"
        )


def noise_discordance(n12: int, n21: int) -> float:
    """The discordant items noise explains, of `n12` candidate-only and `n21` baseline-only
    (ψ·n): twice the smaller count, which a step does not inflate, plus what it falls short of
    b + c by under A/A (E|b − c| = √(2(b + c)/π)); without that term the floor at 200 clips sat
    low and 91 % of A/A streaks cleared it, not 97 %. The same-morning re-run reads it too
    (analysis/rerun.py `night_sigma`)."""
    return 2 * min(n12, n21) + math.sqrt(2 * (n12 + n21) / math.pi)


def _quantile(share: float, nights: int) -> float:
    """The one-sided quantile at `share`: of Student's t with nights − 1 degrees of freedom
    where the standard error carries an estimated φ (analysis/gate.py `widened`), else normal."""
    if nights > 1:
        return float(student_t.ppf(share, nights - 1))
    return float(norm.ppf(share))


def resolution_floor(
    psi: float, n: int, policy: GatePolicy, phi: float = 1.0, phi_nights: int = 0
) -> tuple[float, float]:
    """(floor, z_c) for a series of `n` items a night at noise discordance `psi` and run-level
    noise `phi` (estimated from `phi_nights` nightly totals): the regression it tracks and the
    z of the bound that must fall below it (the module's rule)."""
    phi = max(phi, 1.0)
    nights = phi_nights if phi > 1.0 else 0
    z_aa = _quantile(policy.resolve_aa_share, nights)
    z_min = _quantile(0.5 + policy.resolve_confidence_min / 2, nights)
    z_max = _quantile(0.5 + policy.resolve_confidence / 2, nights)
    # φ̂ raises the floor only beyond its own estimation noise (one standard error, relative
    # sd √(2/(nights − 1)), 18 % at 60): without run-level noise φ̂ still runs above its floor
    # of 1 half the time, and gated wider on φ̂ itself 9 % of 1,088-clip steps resolved.
    sigma = math.sqrt(psi / (policy.resolve_nights * max(n, 1)))
    credible = phi / _spread(nights)
    if policy.min_effect >= (z_min + z_aa) * sigma * math.sqrt(max(credible, 1.0)):
        return policy.min_effect, z_max
    return (z_min + z_aa) * sigma * math.sqrt(phi), z_min


def _spread(nights: int) -> float:
    """1 + φ̂'s relative standard error from `nights` nightly totals (1 without an estimate)."""
    return 1 + math.sqrt(2 / (nights - 1)) if nights > 1 else 1.0


def rule_out(
    tables: Sequence[Table],
    policy: GatePolicy,
    phi: float = 1.0,
    phi_nights: int = 0,
    histories: Sequence[DecisionHistory | None] = (),
) -> RuleOut:
    """The pooled bound and the floor of a streak's paired tables (one per night), both
    widened by the run-level noise `phi` estimated from `phi_nights` nightly baseline totals
    (night/history.py `noise`; 1 and 0 where none is known). Where every night of the streak
    has usable history evidence (`histories`, pooled by `against`) precise enough to hold
    min_effect at z_max or beyond (`history_z`), the bound is theirs instead."""
    n11, n12, n21, n22 = (sum(int(t[i]) for t in tables) for i in range(4))
    total = max(n11 + n12 + n21 + n22, 1)
    # McNemar's normal bound on the pooled counts (below): the floor's σ is on its scale, so an
    # A/A streak clears the floor at the share it was chosen for (Newcombe's interval is wider
    # at a few dozen discordant items: 89 % of A/A alerts at 200 clips).
    psi = noise_discordance(n12, n21) / total
    items = round(total / max(len(tables), 1))
    phi = max(phi, 1.0)
    floor, z_c = resolution_floor(psi, items, policy, phi, phi_nights)
    # At least one discordant item's worth of width: no discordance at all (a deterministic
    # small suite) is not certainty that Δ is 0. Each night's run-level shift adds to its
    # Δ̂ what item counts cannot show, φ times their variance (nights' shifts independent,
    # so the pooled variance is φ times the pooled counts' too).
    high = (n12 - n21 + z_c * math.sqrt(phi * max(n12 + n21, 1))) / total
    if (pooled := against(histories)) is not None:
        delta, sd = pooled
        if (z_h := history_z(sd, policy, phi_nights if phi > 1.0 else 0)) is not None:
            return RuleOut(delta + z_h * sd, policy.min_effect, items, psi, False, phi, True)
    return RuleOut(high, floor, items, psi, floor > policy.min_effect, phi)


def history_z(sd: float, policy: GatePolicy, phi_nights: int) -> float | None:
    """z_c of a streak against the baseline's history whose pooled Δ̂ has standard error `sd`
    (φ included), or None where A/A streaks would not clear min_effect at resolve_aa_share
    with z_c at z_max: there the history cannot hold min_effect and McNemar's rule, its
    floor and gating, stands (a short window; 544 clips and fewer, gated wider). Elsewhere
    z_c is as high as A/A streaks can afford with φ̂ one standard error up (at least z_max),
    so the room a precise streak has goes to holding a persisting step open."""
    z_aa = _quantile(policy.resolve_aa_share, phi_nights)
    z_max = _quantile(0.5 + policy.resolve_confidence / 2, phi_nights)
    if policy.min_effect / sd - z_aa < z_max:
        return None
    return max(z_max, policy.min_effect / (sd * math.sqrt(_spread(phi_nights))) - z_aa)


def against(histories: Sequence[DecisionHistory | None]) -> tuple[float, float] | None:
    """(Δ̂, its standard error) of a streak's nights against the baseline's per-item history,
    pooled; None unless every night has usable evidence with its standard error stored.

    Each night's Δ̂ is its candidate against the mean of the baseline's last k nights, with
    variance φV(1 + 1/k)/n². Over c nights the candidates' parts average out but the windows'
    are nearly the same nights, so the pooled variance is φV(1/c + 1/k)/n²: at 1,088 clips
    three nights' σ is 0.34 points against McNemar's 0.44 on the same nights, which puts
    min_effect 5.9 σ up, not 4.6, and both resolution goals in reach (issue 65)."""
    usable = [h for h in histories if h is not None and h.refused is None and h.sd > 0]
    if not usable or len(usable) < len(histories):
        return None
    c, k = len(usable), sum(h.nights for h in usable) / len(usable)
    delta = sum(h.delta for h in usable) / c
    sd = sum(h.sd for h in usable) / c * math.sqrt((1 / c + 1 / k) / (1 + 1 / k))
    return delta, sd
