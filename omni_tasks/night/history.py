"""The night's history-aware evidence (pure): each pairing's candidate tonight against the
baseline's per-item history (tonight's baseline included), with the run-level noise φ
estimated from the baseline's stored nightly totals, and the key's nights' stored z read back
for the accumulating detector (analysis/history.py holds the statistics; this module only
feeds them a night's inputs and words their answers)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from scipy.stats import norm

from omni_tasks.analysis import gate as rules
from omni_tasks.analysis import history
from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts import DecisionHistory
from omni_tasks.contracts.night import GradedRun, KeyNight, NightInputs

# Fewer nights of baseline totals than this and φ stays at its prior 1: at 14 nights the null
# estimate's p90 is already 1.52 (issue 65), so a shorter window mostly measures its own noise.
PHI_MIN_NIGHTS = 14


def evidence(
    inputs: NightInputs, baselines: Sequence[str], candidates: Sequence[str], policy: GatePolicy
) -> DecisionHistory | None:
    """The pairing's history evidence: its first candidate run tonight against the baseline's
    per-item history, which is of the baseline's default variant's first seed (None for a
    pairing against any other run, or with no graded run a side)."""
    if not baselines or not candidates:
        return None
    base, cand = inputs.graded.get(baselines[0]), inputs.graded.get(candidates[0])
    if base is None or cand is None or base.run.variant != "default":
        return None
    tau = policy.primary_tau
    tonight = _broken(base, tau)
    first = history.baseline_window(inputs.baseline_items, tonight, drift_p=policy.drift_p)
    stored = [total for _, total in inputs.baseline_totals][-(policy.phi_nights - 1) :]
    noise = history.overdispersion(
        [*stored, sum(tonight.values())], first.variance, min_nights=PHI_MIN_NIGHTS
    )
    window = history.baseline_window(
        inputs.baseline_items, tonight, drift_p=policy.drift_p, phi=noise.phi
    )
    stat = history.history_z([_broken(cand, tau)], window, noise.phi)
    refused = window.refused
    if refused is None and not math.isfinite(stat.z):
        refused = "the baseline's window has no variance: every item always or never broken"
    return DecisionHistory(
        z=stat.z if math.isfinite(stat.z) else 0.0,
        delta=stat.delta,
        n=stat.n,
        nights=len(window.totals),
        refused=refused,
        phi=noise.phi,
        phi_nights=noise.nights,
        sd=stat.sd,
    )


def by_history(h: DecisionHistory | None, policy: GatePolicy) -> bool:
    """Whether history evidence `h` alone makes its night REGRESSED: usable, one-sided p below
    `history_regress_p` (its z already widened by √φ), Δ̂ ≥ min_effect."""
    if h is None or h.refused is not None:
        return False
    return h.z >= float(norm.isf(policy.history_regress_p)) and h.delta >= policy.min_effect


def restarts(
    p_holm: float | None, h: DecisionHistory | None, confirmed: bool, policy: GatePolicy
) -> bool:
    """Whether a REGRESSED night restarts an open alert's quiet streak: confirmed, REGRESSED by
    its history evidence `h`, or its Holm p still below `resolve_restart_alpha` once widened by
    the night's φ (a night without a McNemar p, a run group's, is taken as it is). The bench's
    resolution figures call it too (bench/clip_model_sim.py, bench/simlib.py)."""
    if confirmed or by_history(h, policy) or p_holm is None:
        return True
    return rules.widened(p_holm, *noise(h)) < policy.resolve_restart_alpha


def lifted(v: rules.Verdict, h: DecisionHistory | None, policy: GatePolicy) -> rules.Verdict:
    """A SAME or UNKNOWN verdict made REGRESSED by its history evidence alone (one-sided p
    below `history_regress_p`, Δ̂ ≥ min_effect), else `v` as it is. REGRESSED confirms
    nothing by itself: it makes the night one the confirming paths (the re-run) may confirm."""
    if v.verdict not in ("SAME", "UNKNOWN") or h is None or not by_history(h, policy):
        return v
    cut = float(norm.isf(policy.history_regress_p))
    why = (
        f"REGRESSED by the history: z {h.z:.2f} ≥ {cut:.2f} (one-sided p "
        f"{policy.history_regress_p:g}), Δ̂ {h.delta * 100:+.2f} points over {h.n} items"
    )
    return dataclasses.replace(v, verdict="REGRESSED", reasons=[*v.reasons, why])


def _broken(g: GradedRun, tau: float) -> dict[str, bool]:
    """Each counted item (scored or failed) of a run: broken or not. An infra item says
    nothing about the model, so it is left out rather than counted as not broken."""
    return {c.utt_id: is_broken(c, tau) for c in g.clips if count_of(c) != "infra"}


def reasons(h: DecisionHistory | None) -> list[str]:
    """What the decision says of its history evidence and run-level noise."""
    if h is None:
        return []
    if h.phi_nights < PHI_MIN_NIGHTS:
        noise = (
            f"run-level noise φ {h.phi:.2f} assumed: {_nights(h.phi_nights)} of baseline "
            f"totals on record, fewer than {PHI_MIN_NIGHTS}"
        )
    else:
        noise = (
            f"run-level noise φ {h.phi:.2f} over {h.phi_nights} nights of baseline totals: "
            "confirmation z widened by √φ"
        )
    if h.refused is not None:
        return [noise, f"history evidence refused: {h.refused}"]
    return [
        noise,
        f"history evidence: Δ̂ {h.delta * 100:+.2f} points over {h.n} items against "
        f"{h.nights} baseline nights, z {h.z:.2f}",
    ]


def _nights(n: int) -> str:
    return f"{n} night" if n == 1 else f"{n} nights"


def noise(h: DecisionHistory | None) -> tuple[float, int]:
    """The run-level noise φ a stored night's confirmation is widened by (its history
    evidence `h`), and the nightly totals it was estimated from (1 and 0 before φ was kept, or
    while it is assumed)."""
    if h is None or h.phi_nights < PHI_MIN_NIGHTS:
        return 1.0, 0
    return h.phi, h.phi_nights


def confirms(series: Sequence[KeyNight], k: KeyNight, policy: GatePolicy) -> str | None:
    """Why the history path confirms REGRESSED night `k` (one of `series`), else None: the
    detector reads the history z of the key's consecutive non-INFRA nights up to `k` (oldest
    first), back to the newest night without usable history evidence (none stored, or its
    window refused)."""
    if k.verdict != "REGRESSED" or k.history is None or k.history.refused is not None:
        return None
    chain: list[history.HistoryStat] = []
    previous = None
    for night in sorted(series, key=lambda x: x.nightly):
        if night.nightly > k.nightly or night.verdict == "INFRA":
            continue
        h = night.history
        if previous is not None and not rules.consecutive(previous, night.nightly, policy):
            chain = []
        previous = night.nightly
        if h is None or h.refused is not None:
            chain = []
        else:
            chain.append(history.HistoryStat(h.n, h.delta, h.z, 1))
    return history.confirms(chain, policy)


def paths(pooled: bool, by_history: str | None) -> list[str]:
    """The decision's words for the paths that confirmed it (none: not confirmed)."""
    out = ["confirmed by the paired rule (one night's or pooled nights' McNemar)"] if pooled else []
    return out + ([] if by_history is None else [f"confirmed by the history: {by_history}"])
