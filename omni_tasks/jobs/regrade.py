"""Re-grading (what `omni_regrade` calls): a stored run's audio graded again by the grader
the trigger form names, into a grading of its own (never a new run). The form is an allow-list:
it picks a backend, window, precision and device; the model is the backend's pinned default
(a form never names a model path or one the grader would fetch). A field left empty is the
deployment config's grader for the run's series (its benchmark, model and lane), so a
production re-grade runs on the workers' device with the fleet's backend unless it says
otherwise."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg

from omni_tasks.deployment.one_series import series_config
from omni_tasks.deployment.reading import ConfigError
from omni_tasks.grading.asr import GraderSpec
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.grade import GradingOutcome, grade_run
from omni_tasks.store.runs import get_run

# The trigger form's fields that make the grader (the rest name the run).
GRADER_FIELDS = ("backend", "precision", "window", "device", "batch_size", "harness_version")

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


def grader_spec(
    conn: psycopg.Connection[Any], form: Mapping[str, Any], variable: str | None
) -> GraderSpec:
    """The form's grader over the configured series' (`variable`: the deployment config)."""
    check_form(form)
    run = get_run(conn, str(form["run_key"]))
    try:
        config = series_config(variable, run.benchmark, run.lane, run.model)
        configured = config.get("grader") or {}
        if not isinstance(configured, dict):
            raise ConfigError("grader: a mapping of grader fields")
    except ConfigError as exc:
        raise RegradeFormError(f"deployment config: {exc}") from None
    return GraderSpec.from_params(
        {k: form[k] if form.get(k) is not None else configured.get(k) for k in GRADER_FIELDS}
    )


def regrade(
    conn: psycopg.Connection[Any], form: Mapping[str, Any], variable: str | None = None
) -> GradingOutcome:
    grader = load_grader(grader_spec(conn, form, variable))
    out = grade_run(conn, str(form["run_key"]), grader)
    conn.commit()
    return out
