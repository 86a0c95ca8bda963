"""Paired per-clip A/B of a candidate against a baseline on the same prompts."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import t as student_t

from omni_tasks.analysis.accounting import count_of, error_of, is_broken, is_wer_scored
from omni_tasks.analysis.failure_modes import diagnose
from omni_tasks.analysis.intervals import mcnemar_exact, newcombe_paired
from omni_tasks.contracts import PairedFigures
from omni_tasks.harness import harnesses_of, window_of, window_unknown
from omni_tasks.records import ClipRecord

FINGERPRINTS = ("dataset_fingerprint", "prompt_fingerprint", "execution_fingerprint", "grader_id")


@dataclass(frozen=True)
class PairedTable(PairedFigures):
    """The paired figures with the items behind them (regressed worst first)."""

    regressed_clips: list[str] = field(default_factory=list)
    improved_clips: list[str] = field(default_factory=list)


def paired_table(
    baseline: Sequence[ClipRecord], candidate: Sequence[ClipRecord], tau: float
) -> PairedTable:
    """Clips counted (scored or failed) in both runs only; infra on either side is excluded."""
    base = {c.utt_id: c for c in baseline if count_of(c) != "infra"}
    cand = {c.utt_id: c for c in candidate if count_of(c) != "infra"}
    broken = {u: (is_broken(base[u], tau), is_broken(cand[u], tau)) for u in cand if u in base}
    n11 = sum(bb and cb for bb, cb in broken.values())
    regressed = [u for u, (bb, cb) in broken.items() if cb and not bb]
    improved = [u for u, (bb, cb) in broken.items() if bb and not cb]
    n22 = len(broken) - n11 - len(regressed) - len(improved)
    diffs = [
        min(error_of(cand[u]), 1.0) - min(error_of(base[u]), 1.0)
        for u in broken
        if is_wer_scored(base[u]) and is_wer_scored(cand[u])
    ]
    figures = paired_figures(n11, len(regressed), len(improved), n22, diffs)
    return PairedTable(
        **dataclasses.asdict(figures),
        regressed_clips=sorted(regressed, key=lambda u: -error_of(cand[u])),  # worst first
        improved_clips=improved,
    )


def paired_figures(
    n11: int, n12: int, n21: int, n22: int, diffs: Sequence[float] = ()
) -> PairedFigures:
    """The paired figures of a 2×2 table of broken items (n12: broken in the candidate only)
    and, for WER-scored items, the capped-WER differences (candidate − baseline)."""
    p_reg, p_imp = mcnemar_exact(n12, n21)
    delta, lo, hi = newcombe_paired(n11, n12, n21, n22)
    mean_diff, diff_ci = _paired_t(diffs)
    return PairedFigures(
        n_paired=n11 + n12 + n21 + n22,
        stable_broken=n11,
        regressed=n12,
        improved=n21,
        stable_ok=n22,
        mcnemar_p=p_reg,
        mcnemar_p_improve=p_imp,
        delta_tail_fraction=delta,
        delta_tail_fraction_ci=(lo, hi),
        delta_capped_mean_wer=mean_diff,
        delta_capped_mean_wer_ci=diff_ci,
    )


def _paired_t(
    diffs: Sequence[float], confidence: float = 0.95
) -> tuple[float | None, tuple[float, float] | None]:
    """Mean paired difference with a t-interval (n is large; identical runs give a
    zero-width interval instead of the NaN a BCa bootstrap returns)."""
    n = len(diffs)
    if n == 0:
        return None, None
    mean = sum(diffs) / n
    if n == 1:
        return mean, (mean, mean)
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(var / n)
    return mean, (mean - half, mean + half)


def comparability(
    baseline: Mapping[str, object], candidate: Mapping[str, object]
) -> tuple[bool, list[str], list[str]]:
    """(comparable, reasons it is not, warnings). Unknown on both sides is comparable with a
    warning; unknown on one side only is a mismatch."""
    reasons, warnings = [], []
    for key, what in (("lane", "cross-lane"), ("model", "cross-model")):
        b, c = baseline.get(key), candidate.get(key)
        if b is not None and c is not None and b != c:  # asked for by name: labelled, never a gate
            warnings.append(
                f"{what} comparison: {b} vs {c} (the nightly gate never pairs them: each series "
                "keeps its own baseline)"
            )
    if baseline.get("benchmark") != candidate.get("benchmark"):
        reasons.append(
            f"benchmark differs: {baseline.get('benchmark')} vs {candidate.get('benchmark')}"
        )
    for key in FINGERPRINTS:
        b, c = baseline.get(key), candidate.get(key)
        if b is None and c is None:
            warnings.append(f"{key} unknown on both sides; assumed comparable")
        elif (
            b != c
            and key == "execution_fingerprint"
            and _stage_settings_unknown_only(baseline.get("execution"), candidate.get("execution"))
        ):
            warnings.append(
                "per-stage settings unknown on one side (a run stored before they were "
                "recorded, or a target without a deploy config); assumed comparable"
            )
        elif key == "grader_id" and b is not None and c is not None:
            reason, warning = _graders(str(b), str(c))
            reasons += [reason] if reason else []
            warnings += [warning] if warning else []
        elif b != c:
            reasons.append(f"{key} differs: {_short(b)} vs {_short(c)}")
    return (not reasons, reasons, warnings)


def _graders(b: str, c: str) -> tuple[str | None, str | None]:
    """(reason, warning) for two grader ids. Differing window policies get a message of their
    own: the same clips score differently under them (runaway clips most), by harness version."""
    wb, wc = window_of(b), window_of(c)
    if b == c:
        unknown = "window policy unknown (an artifact imported without --harness-version)"
        return None, (f"{unknown} on both sides; assumed the same" if window_unknown(b) else None)
    if wb is not None and wc is not None and wb != wc:
        return (
            f"window policies differ: {wb} ({_harnesses(wb)}) vs {wc} ({_harnesses(wc)}); "
            "re-grade one run under the other's policy (grade --window/--harness-version) "
            "or force the comparison",
            None,
        )
    return f"grader_id differs: {b} vs {c}", None


def _harnesses(window: str) -> str:
    versions = harnesses_of(window)
    return "harness " + ", ".join(versions) if versions else "no harness version"


def _stage_settings_unknown_only(a: Any, b: Any) -> bool:
    """The two executions differ only in per-stage settings that one side does not know."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    rest_a = {k: v for k, v in a.items() if k != "stage_settings"}
    rest_b = {k: v for k, v in b.items() if k != "stage_settings"}
    known_a, known_b = a.get("stage_settings") is not None, b.get("stage_settings") is not None
    return rest_a == rest_b and known_a != known_b


def _short(v: Any) -> str:
    return "unknown" if v is None else str(v)[:16]


def mode_shift(
    baseline: Sequence[ClipRecord],
    candidate: Sequence[ClipRecord],
    tau: float,
    diagnoses: frozenset[str] = frozenset({"failure_modes"}),
) -> dict[str, dict[str, int]]:
    """Broken clips per failure mode and per origin, both sides, for a family that declares
    the failure-mode diagnosis (seed-TTS); any other item counts under each of its breakdown
    labels instead (e.g. ``task:Event Sequence``), if it has any."""
    out: dict[str, dict[str, int]] = {}
    for side, clips in (("baseline", baseline), ("candidate", candidate)):
        for c in clips:
            if not is_wer_scored(c) or "failure_modes" not in diagnoses:
                keys = [f"{dim}:{label}" for dim, label in (c.breakdown or {}).items()]
                keys = keys if count_of(c) != "infra" and is_broken(c, tau) else []
            elif (d := diagnose(c, tau)) is not None:
                keys = [f"mode:{d.mode}", f"origin:{d.origin}"]
            else:
                keys = []
            for key in keys:
                out.setdefault(key, {"baseline": 0, "candidate": 0})[side] += 1
    return out
