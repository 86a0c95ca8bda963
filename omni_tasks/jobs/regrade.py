"""Re-grading (what `seed_tts_regrade` calls): a stored run's audio graded again by the grader
the trigger form names, into a grading of its own (never a new run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from omni_tasks.grading.asr import GraderSpec, load_grader
from omni_tasks.grading.grade import GradingOutcome, grade_run

# The trigger form's fields that make the grader (the rest name the run).
GRADER_FIELDS = (
    "backend",
    "model",
    "precision",
    "window",
    "device",
    "batch_size",
    "harness_version",
)


def regrade(conn: psycopg.Connection[Any], form: Mapping[str, Any]) -> GradingOutcome:
    grader = load_grader(GraderSpec.from_params({k: form.get(k) for k in GRADER_FIELDS}))
    out = grade_run(conn, str(form["run_key"]), grader, show_progress=False)
    conn.commit()
    return out
