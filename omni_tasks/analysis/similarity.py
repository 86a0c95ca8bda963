"""Speaker similarity as a second gated metric, for the series whose upstream gate gates it
(MiniCPM-o seed-TTS zh: WER ≤ 0.0156 *and* SIM ≥ 0.689). Like the tail, it is decided per
clip and paired: a clip's SIM moved down when the candidate's is below the baseline's by more
than the margin, up when above by more; an exact sign test on those clips says whether SIM
fell. One combined verdict: the tail's, made REGRESSED when SIM fell; and a gated SIM that was
not computed on either side is never a pass (upstream's validator skips a missing SIM, so the
nightly "passes" a gate it never evaluated)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

from omni_tasks.analysis.gate import Verdict
from omni_tasks.records import ClipRecord


@dataclass(frozen=True)
class SimTest:
    n_paired: int  # clips with a SIM on both sides
    n_down: int  # candidate below baseline by more than the margin
    n_up: int
    mean_delta: float | None  # candidate − baseline, over the paired clips
    p_down: float | None  # exact sign test: SIM fell (one-sided)
    margin: float

    @property
    def line(self) -> str:
        if not self.n_paired:
            return "speaker similarity: no clip has it on both sides"
        assert self.mean_delta is not None and self.p_down is not None
        return (
            f"speaker similarity: mean Δ {self.mean_delta:+.4f} over {self.n_paired} clips, "
            f"down:up {self.n_down}:{self.n_up} beyond ±{self.margin:g}, sign-test p "
            f"{self.p_down:.3g}"
        )


def sim_test(
    baseline: Sequence[ClipRecord], candidate: Sequence[ClipRecord], margin: float
) -> SimTest:
    base = {c.utt_id: c.sim for c in baseline if _finite(c.sim)}
    pairs = [(base[c.utt_id], c.sim) for c in candidate if c.utt_id in base and _finite(c.sim)]
    deltas = [float(c) - float(b) for b, c in pairs]  # type: ignore[arg-type]
    down = sum(d < -margin for d in deltas)
    up = sum(d > margin for d in deltas)
    p = binomtest(down, down + up, 0.5, alternative="greater").pvalue if down + up else 1.0
    return SimTest(
        n_paired=len(deltas),
        n_down=down,
        n_up=up,
        mean_delta=math.fsum(deltas) / len(deltas) if deltas else None,
        p_down=float(p) if deltas else None,
        margin=margin,
    )


def combine(verdict: Verdict, test: SimTest, alpha: float) -> Verdict:
    """The series' one verdict when SIM is gated too."""
    if verdict.verdict == "INFRA":
        return verdict
    reasons = [*verdict.reasons, test.line]
    if not test.n_paired:
        return dataclasses.replace(
            verdict,
            verdict="INFRA",
            reasons=[
                *reasons,
                "speaker similarity is gated for this series but was not computed: a gate "
                "that was not evaluated is never a pass",
            ],
        )
    assert test.p_down is not None and test.mean_delta is not None
    if test.p_down < alpha and test.mean_delta < 0:
        return dataclasses.replace(verdict, verdict="REGRESSED", reasons=reasons)
    return dataclasses.replace(verdict, reasons=reasons)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
