"""Gate verdicts (pure): Holm over the night, REGRESSED / IMPROVED / SAME / UNKNOWN / INFRA,
and confirmation over a key's nightly series."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from scipy.stats import norm
from scipy.stats import t as student_t

from omni_tasks.analysis.intervals import holm, mcnemar_exact
from omni_tasks.analysis.noise import mde
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.formatting import pts, pts_ci, within_pts


@dataclass(frozen=True)
class Evidence:
    """What one comparison of the night contributes to the gate."""

    n_paired: int = 0
    regressed: int = 0  # b
    improved: int = 0  # c
    p_regress: float = 1.0
    p_improve: float = 1.0
    delta_tail: float = 0.0
    delta_tail_ci: tuple[float, float] = (-1.0, 1.0)
    infra_reasons: tuple[str, ...] = ()
    # Δ tail as an exact ratio of counts, so a step that sits exactly on the practical minimum
    # is not lost to float rounding; None means (regressed − improved) / n_paired.
    delta_exact: Fraction | None = None
    notes: tuple[str, ...] = ()  # said with the verdict (e.g. runs counted once as copies)

    @property
    def delta_counts(self) -> Fraction:
        if self.delta_exact is not None:
            return self.delta_exact
        if self.n_paired == 0:
            return Fraction(0)
        return Fraction(self.regressed - self.improved, self.n_paired)


def at_least(delta: Fraction, threshold: float) -> bool:
    """delta ≥ threshold, with the policy's decimal threshold read exactly (0.02 is 1/50)."""
    return delta >= Fraction(repr(threshold))


@dataclass(frozen=True)
class Verdict:
    verdict: str
    p_regress_holm: float | None
    p_improve_holm: float | None
    margin: float | None
    mde: float | None
    reasons: list[str] = field(default_factory=list)


def decide_night(items: Sequence[Evidence], policy: GatePolicy) -> list[Verdict]:
    """Verdicts for all comparisons of one night; Holm runs over the non-INFRA ones."""
    live = [i for i, e in enumerate(items) if not e.infra_reasons]
    m = max(len(live), 1)
    adj_reg = dict(zip(live, holm([items[i].p_regress for i in live]), strict=True))
    adj_imp = dict(zip(live, holm([items[i].p_improve for i in live]), strict=True))
    out = []
    for i, e in enumerate(items):
        if e.infra_reasons:
            out.append(Verdict("INFRA", None, None, None, None, list(e.infra_reasons)))
            continue
        psi = policy.noise_psi
        if psi is None:
            psi = (e.regressed + e.improved) / e.n_paired if e.n_paired else 1.0
        detectable = mde(psi, e.n_paired, policy.alpha, m, policy.power)
        margin = max(policy.same_margin, detectable)
        p_reg, p_imp = adj_reg[i], adj_imp[i]
        lo, hi = e.delta_tail_ci
        delta = e.delta_counts
        reasons = [
            f"Δ tail {pts_ci(e.delta_tail, e.delta_tail_ci)}, "
            f"regressed:improved {e.regressed}:{e.improved}, "
            f"Holm p_regress {p_reg:.3g} (m={m})",
            *e.notes,
        ]
        if p_reg < policy.alpha and at_least(delta, policy.min_effect):
            verdict = "REGRESSED"
        elif p_imp < policy.alpha and at_least(-delta, policy.min_effect):
            verdict = "IMPROVED"
        elif margin > policy.max_same_margin:
            # Too few clips to call anything equivalent: a ±30-point "SAME" says nothing.
            verdict = "UNKNOWN"
            reasons.append(
                f"equivalence margin {within_pts(margin)} (MDE {pts(detectable)}) exceeds the "
                f"{within_pts(policy.max_same_margin)} cap: too few paired items to call SAME"
            )
        elif -margin < lo and hi < margin:
            verdict = "SAME"
            reasons.append(f"interval inside {within_pts(margin)} (MDE {pts(detectable)})")
        else:
            verdict = "UNKNOWN"
            reasons.append(
                f"interval not inside {within_pts(margin)} (MDE {pts(detectable)}) and "
                "not significant: more seeds or nights would tell"
            )
        out.append(Verdict(verdict, p_reg, p_imp, margin, detectable, reasons))
    return out


@dataclass(frozen=True)
class SeriesPoint:
    """One stored decision of a (benchmark, candidate, baseline, variant) series."""

    nightly: dt.date
    verdict: str
    p_regress_holm: float | None
    regressed: int
    improved: int
    n_paired: int
    m: int = 1
    # A run-group night is decided by a permutation test and stores no paired table, so the
    # pooling rule skips it (it still counts as a consecutive REGRESSED night).
    paired: bool = True
    # The run-level noise φ its confirmation z is widened by (√φ, floor 1): a night's items do
    # not break independently when a run's hard set moves as one (issue 65).
    phi: float = 1.0
    phi_nights: int = 0  # the nightly totals φ was estimated from (0: not estimated)


def consecutive(earlier: dt.date, later: dt.date, policy: GatePolicy) -> bool:
    """Two non-INFRA nights of a series are consecutive when no other non-INFRA night lies
    between them and they are at most `confirm_window_days` apart (INFRA or missing nights
    inside the window neither break nor extend a streak)."""
    return 0 < (later - earlier).days <= policy.confirm_window_days


def confirmations(series: Sequence[SeriesPoint], policy: GatePolicy) -> list[bool]:
    """Whether each REGRESSED point is confirmed, in the input order. Nights are taken in
    nightly order (whatever order they were decided in); a night decided late (a backfill)
    can confirm, or stop confirming, the nights after it."""
    order = sorted(range(len(series)), key=lambda i: series[i].nightly)
    confirmed = [False] * len(series)
    streak: list[SeriesPoint] = []  # consecutive non-INFRA nights up to this one, newest last
    for i in order:
        point = series[i]
        if point.verdict == "INFRA":
            continue
        if streak and not consecutive(streak[-1].nightly, point.nightly, policy):
            streak = []
        streak = [*streak[-(policy.confirm_pool_nights - 1) :], point]
        prev = streak[-2] if len(streak) > 1 else None
        if point.verdict == "REGRESSED":
            # A run-group night never confirms alone: its exact test takes the seeds as
            # independent, and run-level noise (a run's hard-set rate varying by 3 points)
            # makes it falsely confirm about 1e-3 of A/A nights; two such nights in a row do
            # about 1e-6 (bench/bench_statistics_sim.py).
            # Two paired nights confirm only pooled: REGRESSED twice in a row alone confirmed
            # A/A noise at 1.1e-4 per night at 1,197 questions (ψ ≈ .17), where one night's
            # false REGRESSED rate nears α (bench_statistics_sim, by family and size). A run-group
            # night has no table to pool, so two REGRESSED nights with one among them confirm.
            confirmed[i] = (
                (
                    point.paired
                    and point.p_regress_holm is not None
                    and widened(point.p_regress_holm, point.phi, point.phi_nights)
                    < policy.confirm_p
                )
                or (
                    prev is not None
                    and prev.verdict == "REGRESSED"
                    and not (prev.paired and point.paired)
                )
                or _pooled_confirms(streak, policy)
            )
    return confirmed


def widened(p: float, phi: float, nights: int = 0) -> float:
    """A one-sided p with its z widened by √φ (floor 1): what it would be under run-level
    noise φ times the independent items' variance. φ estimated from `nights` nightly totals
    is itself a draw (relative sd √(2/(nights − 1)), 18 % at 60), so the widened z is read
    on Student's t with nights − 1 degrees of freedom, as a z over an estimated sd is: on the
    normal, a φ̂ 15 % low quadruples confirm_p's tail, and multiple choice with run-level
    noise (φ ≈ 2) confirmed 1.2e-4 of A/A nights (bench_statistics_sim.py --clip-model
    bench/clip_models/multiple_choice_run_noise.py)."""
    if phi <= 1.0:
        return p
    z = norm.isf(p) / math.sqrt(phi)
    return float(student_t.sf(z, nights - 1) if nights > 1 else norm.sf(z))


def _pooled_confirms(streak: Sequence[SeriesPoint], policy: GatePolicy) -> bool:
    """Whether the last 2, 3, … `confirm_pool_nights` consecutive paired nights, pooled, show
    the regression: an exact p (× the newest night's m) below `confirm_pool_p` split evenly
    over the pools (Bonferroni, so a night's false confirmation stays under `confirm_pool_p`
    whatever their correlation), with Δ ≥ min_effect. More than two nights pooled open a small
    step's alert sooner (8 → 10.1 % at 1,088 clips: p90 7 nights against 9 with two;
    bench/bench_statistics_sim.py)."""
    pools = policy.confirm_pool_nights - 1
    newest = streak[-1]
    reg = imp = n = 0
    for k, point in enumerate(reversed(streak), start=1):
        if not point.paired:
            return False  # a group night has no paired table to pool, nor the nights before it
        reg, imp, n = reg + point.regressed, imp + point.improved, n + point.n_paired
        if k < 2 or n == 0:
            continue
        p, _ = mcnemar_exact(reg, imp)
        # Not `alpha`: Δ ≥ min_effect binds only at ~1,000 items, so at 300 the pooled rule
        # would confirm A/A noise 13× as often as the goal (bench_statistics_sim, by size).
        p = widened(min(1.0, p * newest.m), newest.phi, newest.phi_nights)
        if p < policy.confirm_pool_p / pools and at_least(
            Fraction(reg - imp, n), policy.min_effect
        ):
            return True
    return False
