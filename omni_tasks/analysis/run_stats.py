"""Per-run statistics at a tail threshold tau (DESIGN.md "Statistics")."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from omni_tasks.analysis.accounting import count_of, error_of, is_broken, is_wer_scored
from omni_tasks.analysis.failure_modes import MODES, ORIGINS, diagnose
from omni_tasks.analysis.intervals import wilson
from omni_tasks.analysis.official import finite_mean, official_summary
from omni_tasks.contracts import LabelCell, ModeShare, RunStats
from omni_tasks.records import ClipRecord

LONG_AUDIO_SECONDS = 20.0


Official = Callable[[Sequence[ClipRecord]], dict[str, Any]]
# seed-TTS's diagnosis hooks (Benchmark.diagnoses), the default of a WER run.
SEED_TTS_DIAGNOSES = frozenset({"failure_modes", "questions"})


def run_stats(
    clips: Sequence[ClipRecord],
    tau: float,
    n_expected: int | None = None,
    official: Official = official_summary,
    diagnoses: frozenset[str] = SEED_TTS_DIAGNOSES,
) -> RunStats:
    """Statistics of one grading. ``n_expected`` above the number of clip rows counts the
    missing clips as infra (never silently dropped). ``official``: the benchmark's own summary,
    by its upstream's rules (seed-TTS's by default). ``diagnoses``: the benchmark's declared
    hooks — failure modes and origin of broken items, the question/statement split — run only
    for a family that declares them (an ASR benchmark's broken item is not a talker failure)."""
    modes = "failure_modes" in diagnoses
    stats = _stats(clips, tau, n_expected, official, modes)
    if "questions" not in diagnoses:
        return stats
    return dataclasses.replace(
        stats,
        questions=_stats([c for c in clips if c.is_question], tau, None, official, modes),
        statements=_stats([c for c in clips if not c.is_question], tau, None, official, modes),
    )


def _stats(
    clips: Sequence[ClipRecord],
    tau: float,
    n_expected: int | None,
    official: Official,
    modes: bool,
) -> RunStats:
    expected = len(clips) if n_expected is None else max(n_expected, len(clips))
    kinds = [count_of(c) for c in clips]
    # Each clip's kind and error, once (the figures below read them many times).
    rows = [(c, k, error_of(c, k)) for c, k in zip(clips, kinds, strict=True)]
    scored = [c for c, k, _ in rows if k == "scored"]
    counted = [(c, k, e) for c, k, e in rows if k != "infra"]
    n_scored = len(scored)
    n_failed = kinds.count("failed")
    n_infra = expected - n_scored - n_failed
    n_counted = len(counted)

    # WER figures cover WER-scored clips only: a multiple-choice run has none (no fake WER).
    wer_counted = [(c, k, e) for c, k, e in counted if is_wer_scored(c)]
    uncapped = [e for _, k, e in wer_counted if k == "scored"]
    capped = [min(e, 1.0) for _, _, e in wer_counted]
    errors = sorted((e for _, _, e in wer_counted), reverse=True)
    # Shares of error are ratios: computed on errors scaled by the largest one, so no sum can
    # overflow whatever finite WERs are stored.
    scale = errors[0] if errors and errors[0] > 0 else 1.0
    total_error = math.fsum(e / scale for e in errors)
    broken = [(c, e) for c, k, e in counted if is_broken(c, tau)]
    runaway = [e for _, k, e in wer_counted if k == "scored" and e > 1.0]
    with_counts = [(c, e) for c, k, e in wer_counted if k == "scored" and c.ref_words]
    corpus_ref = sum(c.ref_words or 0 for c, _ in with_counts)

    mode_clips: dict[str, int] = dict.fromkeys(MODES, 0)
    mode_share: dict[str, float] = dict.fromkeys(MODES, 0.0)
    origins: dict[str, int] = dict.fromkeys(ORIGINS, 0)
    n_leak = n_answered = 0
    for c, e in broken if modes else ():
        if not is_wer_scored(c):
            continue
        d = diagnose(c, tau)
        assert d is not None
        mode_clips[d.mode] += 1
        mode_share[d.mode] += e / scale / total_error if total_error else 0.0
        origins[d.origin] += 1
        n_leak += d.task_leak
        n_answered += d.answered

    audio = [c.audio_seconds for c in clips if c.audio_seconds is not None]
    return RunStats(
        tau=tau,
        n_expected=expected,
        n_scored=n_scored,
        n_failed=n_failed,
        n_infra=n_infra,
        coverage=(n_scored + n_failed) / expected if expected else 0.0,
        mean_wer=finite_mean(uncapped) if uncapped else None,
        median_wer=_median(uncapped) if uncapped else None,
        capped_mean_wer=finite_mean(capped) if capped else None,
        corpus_wer=(
            math.fsum(e * ((c.ref_words or 0) / corpus_ref) for c, e in with_counts)
            if corpus_ref
            else None
        ),
        n_broken=len(broken),
        tail_fraction=len(broken) / n_counted if n_counted else None,
        tail_fraction_ci=wilson(len(broken), n_counted) if n_counted else None,
        runaway_fraction=len(runaway) / n_counted if n_counted else None,
        n_runaway=len(runaway),
        top10_error_share=(
            math.fsum(e / scale for e in errors[:10]) / total_error if total_error else 0.0
        ),
        runaway_error_share=(
            math.fsum(e / scale for e in runaway) / total_error if total_error else 0.0
        ),
        failure_modes={m: ModeShare(mode_clips[m], mode_share[m]) for m in MODES},
        origins=origins,
        task_leak_clips=n_leak,
        answered_clips=n_answered,
        official=official(clips),
        audio_seconds=sum(audio),
        clips_over_20s=sum(1 for s in audio if s > LONG_AUDIO_SECONDS),
        accuracy=(
            1 - len(broken) / n_counted if n_counted and len(wer_counted) < n_counted else None
        ),
        breakdown=breakdown_accuracy([c for c, _, _ in counted], tau),
        sim_mean=secondary_mean(scored, "sim"),
        utmos_mean=secondary_mean(scored, "utmos"),
    )


def secondary_mean(clips: Sequence[ClipRecord], name: str) -> float | None:
    """Mean of a secondary score (sim, utmos) over the clips that carry it."""
    values = [v for c in clips if (v := getattr(c, name)) is not None]
    return finite_mean(values) if values else None


def breakdown_accuracy(
    counted: Sequence[ClipRecord], tau: float
) -> dict[str, dict[str, LabelCell]]:
    """Per breakdown dimension and label: correct, total and accuracy (items not broken)."""
    counts: dict[str, dict[str, list[int]]] = {}
    for c in counted:
        for dim, label in (c.breakdown or {}).items():
            cell = counts.setdefault(dim, {}).setdefault(label, [0, 0])
            cell[0] += not is_broken(c, tau)
            cell[1] += 1
    return {
        dim: {label: LabelCell(ok, n, ok / n) for label, (ok, n) in cells.items()}
        for dim, cells in counts.items()
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2
