"""Re-grading (what `seed_tts_regrade` calls): a stored run's audio graded again by the grader
the trigger form names, into a grading of its own (never a new run). The form is an allow-list:
it picks a backend, window, precision and device; the model is the backend's pinned default
(a form never names a model path or one the grader would fetch)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg

from omni_tasks.grading.asr import GraderSpec
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.grade import GradingOutcome, grade_run

# The trigger form's fields that make the grader (the rest name the run).
GRADER_FIELDS = (
    "backend",
    "precision",
    "window",
    "device",
    "batch_size",
    "harness_version",
)


DEVICE = re.compile(r"^(cpu|cuda|npu)(:[0-9]{1,2})?$")


class RegradeFormError(ValueError):
    """A regrade form field outside the allow-list; the message names it."""


def check_form(form: Mapping[str, Any]) -> None:
    unknown = sorted(set(form) - {"run_key", *GRADER_FIELDS})
    if unknown:
        raise RegradeFormError(f"trigger form: {', '.join(unknown)}: not a regrade field")
    device = form.get("device")
    if device is not None and not DEVICE.match(str(device)):
        raise RegradeFormError("trigger form: device: cpu, cuda[:N] or npu[:N]")
    size = form.get("batch_size")
    if size is not None and (not isinstance(size, int) or not 1 <= size <= 64):
        raise RegradeFormError("trigger form: batch_size: 1 to 64")


def regrade(conn: psycopg.Connection[Any], form: Mapping[str, Any]) -> GradingOutcome:
    check_form(form)
    grader = load_grader(GraderSpec.from_params({k: form.get(k) for k in GRADER_FIELDS}))
    out = grade_run(conn, str(form["run_key"]), grader)
    conn.commit()
    return out
