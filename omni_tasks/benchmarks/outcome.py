"""What a stored run came to, read back from the store whichever family ran it: its status,
items by status, the grading read and its headline figures (`omni-tasks bench` prints it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.analysis.run_stats import run_stats
from omni_tasks.formatting import pct
from omni_tasks.records import commonest_failure
from omni_tasks.store import runs


@dataclass(frozen=True)
class RunOutcome:
    run_key: str
    run_status: str
    statuses: dict[str, int]
    grader_id: str
    grading_id: int
    tail_fraction: float | None
    mean_wer: float | None
    n_expected: int
    simulated: bool
    failure: str | None = None  # the most common reason of the items that failed

    def summary(self) -> str:
        tail = pct(self.tail_fraction)
        mean = "n/a" if self.mean_wer is None else f"{self.mean_wer:.3f}"
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        label = " [SIMULATED target]" if self.simulated else ""
        why = f"; failed: {self.failure}" if self.failure else ""
        return (
            f"{self.run_key}: {self.run_status}, {self.n_expected} clips ({counts}); "
            f"tail fraction {tail}, mean WER {mean}, grader {self.grader_id}{label}{why}"
        )


def run_outcome(
    conn: psycopg.Connection[Any], key: str, grader_id: str | None = None
) -> RunOutcome:
    """The stored run under `key`, by its newest grading (or `grader_id`'s)."""
    from omni_tasks.gates.policy import load_policy

    run = runs.get_run(conn, key)
    grading_id, grader = runs.latest_grading(conn, run.run_id, key, grader_id)
    clips = runs.clip_records(conn, grading_id)
    stats = run_stats(clips, load_policy().primary_tau, run.n_expected)
    commonest = commonest_failure(clips)
    failure = f"{commonest[1]} of {len(clips)} clips: {commonest[0]}" if commonest else None
    return RunOutcome(
        key,
        run.status,
        runs.clips_by_status(conn, run.run_id),
        grader,
        grading_id,
        stats.tail_fraction,
        stats.mean_wer,
        run.n_expected,
        bool(run.stack.get("simulated")),
        failure,
    )
