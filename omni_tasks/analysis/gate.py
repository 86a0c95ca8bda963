"""Gate verdicts (pure): Holm over the night, REGRESSED / IMPROVED / SAME / UNKNOWN / INFRA,
and confirmation over a key's nightly series."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from omni_tasks.analysis.intervals import holm, mcnemar_exact
from omni_tasks.analysis.noise import mde
from omni_tasks.analysis.policy import GatePolicy


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
        reasons = [
            f"Δ tail {e.delta_tail:+.4f} [{lo:+.4f}, {hi:+.4f}], "
            f"regressed:improved {e.regressed}:{e.improved}, "
            f"Holm p_regress {p_reg:.3g} (m={m})"
        ]
        if p_reg < policy.alpha and e.delta_tail >= policy.min_effect:
            verdict = "REGRESSED"
        elif p_imp < policy.alpha and -e.delta_tail >= policy.min_effect:
            verdict = "IMPROVED"
        elif -margin < lo and hi < margin:
            verdict = "SAME"
            reasons.append(f"interval inside ±{margin:.4f} (MDE {detectable:.4f})")
        else:
            verdict = "UNKNOWN"
            reasons.append(
                f"interval not inside ±{margin:.4f} (MDE {detectable:.4f}) and "
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


def confirmations(series: Sequence[SeriesPoint], policy: GatePolicy) -> list[bool]:
    """Whether each REGRESSED point is confirmed, in the input order. Nights are taken in
    nightly order (whatever order they were decided in); INFRA nights neither confirm nor
    break a streak."""
    order = sorted(range(len(series)), key=lambda i: series[i].nightly)
    confirmed = [False] * len(series)
    previous: SeriesPoint | None = None
    for i in order:
        point = series[i]
        if point.verdict == "INFRA":
            continue
        if point.verdict == "REGRESSED":
            confirmed[i] = (
                (point.p_regress_holm is not None and point.p_regress_holm < policy.confirm_p)
                or (previous is not None and previous.verdict == "REGRESSED")
                or (previous is not None and _pooled_regressed(previous, point, policy))
            )
        previous = point
    return confirmed


def _pooled_regressed(a: SeriesPoint, b: SeriesPoint, policy: GatePolicy) -> bool:
    n = a.n_paired + b.n_paired
    if n == 0:
        return False
    reg, imp = a.regressed + b.regressed, a.improved + b.improved
    p, _ = mcnemar_exact(reg, imp)
    return min(1.0, p * b.m) < policy.alpha and (reg - imp) / n >= policy.min_effect
