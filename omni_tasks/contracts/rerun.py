"""A same-morning re-run's result (jobs/rerun.py runs it, analysis/rerun.py judges it, the
night's decision reads it back from `omni.rerun`)."""

from __future__ import annotations

from dataclasses import dataclass

from omni_tasks.contracts import Contract

# No nightly, bisection (1000 up) or A/B seed is this high; the seeds on record are skipped too.
# Here, not in analysis/rerun.py: the config schema bounds nightly seeds by it, light to import.
RERUN_SEED_BASE = 7_000_000
SAME_MORNING = "confirmed the same morning"  # how a decision's reasons and Slack say it


@dataclass(frozen=True)
class RerunResult(Contract):
    """A night's same-morning re-run, as stored: which items at which seeds, the signs, the
    exact p, and whether it confirms (`skipped`: why nothing ran)."""

    candidate_branch: str
    baseline_branch: str
    items: int  # the discordant items (re-run, or that would have been)
    seeds: tuple[int, ...] = ()
    candidate_worse: int = 0  # items broken more often on the candidate in the new runs
    baseline_worse: int = 0  # … on the baseline
    p_value: float = 1.0
    alpha: float = 0.0
    full_runs: float = 0.0
    skipped: str | None = None

    @property
    def confirmed(self) -> bool:
        return self.skipped is None and self.p_value < self.alpha

    def text(self) -> str:
        """The decision's and the alert's line."""
        if self.skipped is not None:
            return f"same-morning re-run skipped: {self.skipped}"
        counts = (
            f"{self.candidate_worse} of {self.items} re-run items broke again on "
            f"{self.candidate_branch}, {self.baseline_worse} on {self.baseline_branch}"
        )
        below = "below" if self.confirmed else "not below"
        how = (
            f"sign test p={self.p_value:.2g}, {below} {self.alpha:g}; {len(self.seeds)} fresh "
            f"seeds a branch, {self.full_runs:.2f} full runs"
        )
        if self.confirmed:
            return f"{SAME_MORNING}: {counts} ({how})"
        return f"not confirmed by the same-morning re-run: {counts} ({how})"
