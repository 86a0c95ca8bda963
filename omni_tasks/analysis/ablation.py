"""Which knob brings a regression back (pure): each ablation is the candidate stack with one
deploy override, run on the confirmed night's discriminating clips at fresh seeds, beside fresh
runs of the candidate as it is and of the baseline on the same clips and seeds.

Seeds are added one round at a time until everything is decided or the budget's next round
would not fit (`ablate`). A round runs the baseline, the candidate and every ablation not yet
decided; its pairs join those of earlier rounds (a clip at two seeds is two pairs: under no
difference each pair's direction is a fair coin, so the exact tests stay exact). The most rounds
the budget could afford are planned up front and α is split over them (Bonferroni), so looking
after every round does not raise the error rate; a verdict, once reached, stays.

The reference (fresh candidate against fresh baseline) is **reproduced** when the candidate is
worse (exact McNemar). It is never "ruled out" in full-run points: the chosen clips hold only the
regressed clips that happened to fail on the night, so a bound on them says nothing of the rest;
until it reproduces, every round runs every arm, and the result says how much of the night's
excess on these clips the fresh runs still allow. Per ablation, two paired tests on the
clips: is it better than the candidate (Holm over the ablations), and what is left of the
regression against the baseline (Newcombe interval of Δ broken, scaled to full-run points: the
clips outside the set are the same under both). The verdict:

- **regression gone**: better than the candidate, and what is left is below `min_effect`;
- **partial**: better than the candidate, and still worse than the baseline;
- **unchanged**: not shown better than the candidate, and still worse than the baseline;
- **unclear**: none of these yet (another round may tell; at the budget's end it stays);
- **not reproduced**: the reference never reproduced within the budget, so nothing is judged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from omni_tasks.analysis.discriminating import Outcomes
from omni_tasks.analysis.intervals import holm, mcnemar_exact, newcombe_paired, wilson

DECIDED = frozenset({"regression gone", "partial", "unchanged"})
# (label, seed) -> outcomes on the chosen clips; labels are "baseline", "candidate" and the
# ablations' names.
Evaluate = Callable[[str, int], Outcomes]


@dataclass(frozen=True)
class AblationBudget:
    """What the ablations may spend, in full-run equivalents (clips run / a full run's clips).
    The first round runs every arm and always runs; a later round runs the references and the
    ablations still undecided, and runs only if it fits. The rounds planned (α is split over
    them) price each later round at its cheapest, three arms, so no round that could run is
    left out of the split."""

    full_runs: float
    n_full: int  # a full run's clips
    n_clips: int  # the chosen clips, run once per arm per round
    arms: int  # the baseline, the candidate and the ablations

    @property
    def clips(self) -> int:
        return math.floor(self.full_runs * self.n_full)

    def fits(self, clips_run: int, arms: int) -> bool:
        return clips_run + arms * self.n_clips <= self.clips

    @property
    def rounds(self) -> int:
        left = self.clips - self.arms * self.n_clips
        return 1 + max(0, left // (min(3, self.arms) * self.n_clips))


@dataclass(frozen=True)
class Reproduced:
    """The fresh candidate against the fresh baseline on the clips, pooled over the seeds."""

    n_clips: int  # pairs: chosen clips x seeds
    baseline_broken: int
    candidate_broken: int
    p_worse: float
    bound: float  # upper bound of the candidate's excess, as a share of the pairs
    reproduced: bool


@dataclass(frozen=True)
class AblationVerdict:
    name: str
    broken: int  # of the pairs, on the ablated candidate
    n_clips: int  # pairs: chosen clips x the seeds it ran
    share_ci: tuple[float, float]  # Wilson 95 % of the broken share
    p_better: float  # than the candidate, Holm-adjusted over the ablations
    p_worse: float  # than the baseline
    left: float  # Δ broken against the baseline, in full-run points
    left_ci: tuple[float, float]
    verdict: str

    @property
    def share(self) -> float:
        return self.broken / self.n_clips if self.n_clips else 0.0


@dataclass(frozen=True)
class Ablated:
    """The sequential outcome: the last round's judgement, the seeds run and what they cost."""

    reference: Reproduced
    verdicts: list[AblationVerdict]
    seeds: tuple[int, ...]
    clips_run: int
    budget: AblationBudget

    @property
    def full_runs(self) -> float:
        return self.clips_run / self.budget.n_full if self.budget.n_full else 0.0

    @property
    def decided(self) -> bool:
        return self.reference.reproduced and all(v.verdict in DECIDED for v in self.verdicts)

    @property
    def arithmetic(self) -> str:
        """The budget's arithmetic, for the result."""
        b, run = self.budget, self.clips_run
        return (
            f"budget {b.full_runs:g} full runs = {b.clips:,} clips; the first round is "
            f"{b.arms} arms x {b.n_clips} clips ({b.arms * b.n_clips / b.n_full:.2f}"
            f" full runs), a later one the references and the undecided; {b.rounds} planned "
            f"(α split over them), {len(self.seeds)} run: {run:,} clips = "
            f"{run / b.n_full:.2f} full runs"
        )


def _table(a: Outcomes, b: Outcomes, pairs: Sequence[str]) -> tuple[int, int, int, int]:
    """Paired (both broken, a only, b only, neither) on the pairs."""
    both = sum(a[u] and b[u] for u in pairs)
    a_only = sum(a[u] and not b[u] for u in pairs)
    b_only = sum(b[u] and not a[u] for u in pairs)
    return both, a_only, b_only, len(pairs) - both - a_only - b_only


def reference(baseline: Outcomes, candidate: Outcomes, *, alpha: float) -> Reproduced:
    """The fresh candidate against the fresh baseline, keyed by pair (a clip at a seed);
    the bound (one-sided, 1 − α) is on the share of the pairs."""
    pairs = sorted(set(baseline) & set(candidate))
    n11, c_only, b_only, n22 = _table(candidate, baseline, pairs)
    p_reg = mcnemar_exact(c_only, b_only)[0]
    bound = newcombe_paired(n11, c_only, b_only, n22, 1 - 2 * alpha)[2]
    return Reproduced(
        len(pairs),
        sum(baseline[u] for u in pairs),
        sum(candidate[u] for u in pairs),
        p_reg,
        bound,
        p_reg < alpha,
    )


def judge(
    baseline: Outcomes,
    candidate: Outcomes,
    ablated: Mapping[str, Outcomes],
    *,
    reproduced: bool,
    n_clips: int,
    n_full: int,
    alpha: float,
    min_effect: float,
) -> list[AblationVerdict]:
    """Each ablation on the pairs it ran (see `reference` for the keys); `n_clips` of a full
    run's `n_full` were chosen, which scales a difference on the pairs to full-run points.
    Intervals at 1 − 2α (one-sided α each side)."""
    confidence = 1 - 2 * alpha
    scale = n_clips / n_full if n_full else 0.0
    raw = []
    for name, runs in ablated.items():
        own = sorted(set(runs) & set(baseline) & set(candidate))
        n11, a_only, base_only, n22 = _table(runs, baseline, own)
        _, lo, hi = newcombe_paired(n11, a_only, base_only, n22, confidence)
        _, worse, better, _ = _table(runs, candidate, own)  # a only / candidate only
        raw.append((name, own, n11, a_only, base_only, lo, hi, mcnemar_exact(better, worse)[0]))
    adjusted = holm([r[-1] for r in raw])
    out = []
    for (name, own, n11, a_only, base_only, lo, hi, _), p_better in zip(raw, adjusted, strict=True):
        broken = n11 + a_only
        p_worse = mcnemar_exact(a_only, base_only)[0]
        left = (a_only - base_only) / len(own) * scale if own else 0.0
        left_ci = (lo * scale, hi * scale)
        if not reproduced:
            verdict = "not reproduced"
        elif p_better < alpha and left_ci[1] < min_effect:
            verdict = "regression gone"
        elif p_better < alpha and p_worse < alpha:
            verdict = "partial"
        elif p_worse < alpha:
            verdict = "unchanged"
        else:
            verdict = "unclear"
        out.append(
            AblationVerdict(
                name,
                broken,
                len(own),
                wilson(broken, len(own)),
                p_better,
                p_worse,
                left,
                left_ci,
                verdict,
            )
        )
    return out


def ablate(
    names: Sequence[str],
    evaluate: Evaluate,
    *,
    seed: int,
    budget: AblationBudget,
    alpha: float,
    min_effect: float,
) -> Ablated:
    """Rounds at seeds `seed`, `seed + 1`, … until the reference is reproduced and every
    ablation decided, or the planned rounds are spent (or the next would not fit). A round runs
    the baseline, the candidate and the ablations still undecided."""
    pooled: dict[str, Outcomes] = {label: {} for label in ("baseline", "candidate", *names)}
    alpha_round = alpha / budget.rounds
    clips_run = 0
    seeds: list[int] = []
    pending = list(names)
    reproduced = False  # once a look reproduces the regression, it stays reproduced
    final: dict[str, AblationVerdict] = {}  # likewise each ablation once decided
    for s in range(seed, seed + budget.rounds):
        if seeds and not budget.fits(clips_run, 2 + len(pending)):
            break
        for label in ("baseline", "candidate", *pending):
            got = evaluate(label, s)
            pooled[label].update({f"{u}@{s}": broken for u, broken in got.items()})
            clips_run += len(got)
        seeds.append(s)
        ref = reference(pooled["baseline"], pooled["candidate"], alpha=alpha_round)
        # Shown on every pair run so far; decided at the look that rejected.
        reproduced = reproduced or ref.reproduced
        ref = dataclasses.replace(ref, reproduced=reproduced)
        verdicts = judge(
            pooled["baseline"],
            pooled["candidate"],
            {name: pooled[name] for name in names},
            reproduced=reproduced,
            n_clips=budget.n_clips,
            n_full=budget.n_full,
            alpha=alpha_round,
            min_effect=min_effect,
        )
        if reproduced:
            final |= {v.name: v for v in verdicts if v.verdict in DECIDED and v.name not in final}
            verdicts = [final.get(v.name, v) for v in verdicts]
            pending = [name for name in names if name not in final]
        result = Ablated(ref, verdicts, tuple(seeds), clips_run, budget)
        if result.decided:
            break
    return result
