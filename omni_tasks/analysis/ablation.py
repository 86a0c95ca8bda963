"""Which knob brings a regression back (pure): each ablation is the candidate stack with one
deploy override, run on the confirmed night's discriminating clips at a fresh seed, beside fresh
runs of the candidate as it is and of the baseline on the same clips and seed.

Per ablation two paired exact tests on those clips: is it better than the candidate (Holm over
the ablations), and what is left of the regression against the baseline (Newcombe interval of
Δ broken, scaled to full-run points: the clips outside the set are the same under both). The
verdict:

- **regression gone**: better than the candidate, and the upper bound of what is left is below
  `min_effect` on the full run;
- **partial**: better than the candidate, yet not that close to the baseline;
- **unchanged**: not better than the candidate, and still worse than the baseline;
- **unclear**: neither (more clips or seeds would tell).

When the fresh candidate is not worse than the fresh baseline on the clips, the regression did
not reproduce and no ablation is judged ("not reproduced").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omni_tasks.analysis.discriminating import Outcomes
from omni_tasks.analysis.intervals import holm, mcnemar_exact, newcombe_paired, wilson


@dataclass(frozen=True)
class Reproduced:
    """The fresh candidate against the fresh baseline on the clips."""

    n_clips: int
    baseline_broken: int
    candidate_broken: int
    p_worse: float
    reproduced: bool


@dataclass(frozen=True)
class AblationVerdict:
    name: str
    broken: int  # of the clips, on the ablated candidate
    n_clips: int
    share_ci: tuple[float, float]  # Wilson 95 % of the broken share
    p_better: float  # than the candidate, Holm-adjusted over the ablations
    p_worse: float  # than the baseline
    left: float  # Δ broken against the baseline, in full-run points
    left_ci: tuple[float, float]
    verdict: str

    @property
    def share(self) -> float:
        return self.broken / self.n_clips if self.n_clips else 0.0


def _table(a: Outcomes, b: Outcomes, clips: Sequence[str]) -> tuple[int, int, int, int]:
    """Paired (both broken, a only, b only, neither) on the clips."""
    both = sum(a[u] and b[u] for u in clips)
    a_only = sum(a[u] and not b[u] for u in clips)
    b_only = sum(b[u] and not a[u] for u in clips)
    return both, a_only, b_only, len(clips) - both - a_only - b_only


def judge(
    baseline: Outcomes,
    candidate: Outcomes,
    ablated: Mapping[str, Outcomes],
    *,
    n_full: int,
    alpha: float,
    min_effect: float,
) -> tuple[Reproduced, list[AblationVerdict]]:
    """`baseline`, `candidate` and each ablation on the same clips at the same seed; `n_full`
    is a full run's clip count (to state what is left in full-run points)."""
    clips = sorted(set(baseline) & set(candidate))
    _, c_only, b_only, _ = _table(candidate, baseline, clips)
    p_reg = mcnemar_exact(c_only, b_only)[0]
    ref = Reproduced(
        len(clips),
        sum(baseline[u] for u in clips),
        sum(candidate[u] for u in clips),
        p_reg,
        p_reg < alpha,
    )
    scale = len(clips) / n_full if n_full else 0.0
    raw = []
    for name, runs in ablated.items():
        n11, a_only, base_only, n22 = _table(runs, baseline, clips)
        _, lo, hi = newcombe_paired(n11, a_only, base_only, n22)
        _, worse, better, _ = _table(runs, candidate, clips)  # a only / candidate only
        raw.append((name, n11, a_only, base_only, lo, hi, mcnemar_exact(better, worse)[0]))
    adjusted = holm([r[-1] for r in raw])
    out = []
    for (name, n11, a_only, base_only, lo, hi, _), p_better in zip(raw, adjusted, strict=True):
        broken = n11 + a_only
        p_worse = mcnemar_exact(a_only, base_only)[0]
        left = (a_only - base_only) / len(clips) * scale if clips else 0.0
        left_ci = (lo * scale, hi * scale)
        if not ref.reproduced:
            verdict = "not reproduced"
        elif p_better < alpha and left_ci[1] < min_effect:
            verdict = "regression gone"
        elif p_better < alpha:
            verdict = "partial"
        elif p_worse < alpha:
            verdict = "unchanged"
        else:
            verdict = "unclear"
        out.append(
            AblationVerdict(
                name,
                broken,
                len(clips),
                wilson(broken, len(clips)),
                p_better,
                p_worse,
                left,
                left_ci,
                verdict,
            )
        )
    return ref, out
