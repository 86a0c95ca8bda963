"""Airflow callbacks: a failed try of a task becomes an INFRA alert of its series and night;
the watcher fails the DAG run when any task failed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from omni_tasks.dag_support.runtime import results_db
from omni_tasks.series import Series

if TYPE_CHECKING:
    from airflow.sdk import Context

log = logging.getLogger(__name__)


def fail_the_run() -> None:
    """A DAG's watcher: runs only when a task failed, and fails the DAG run with it (the
    always-run `dispatch_alerts` leaf would otherwise mark the run successful)."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException("a task of this run failed (its log says why); alerts sent")


def series_of_task(context: Context) -> Series:
    """The series a task ran for: a nightly GPU task's plan names it; a one-series form
    (bisect, ablate, regrade) its benchmark, model and lane; else (a fleet-wide task) the
    default series."""
    from omni_tasks.config import get_settings
    from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL

    plan = (getattr(context.get("task"), "op_kwargs", None) or {}).get("plan")
    if isinstance(plan, dict) and isinstance(plan.get("series"), str):
        return Series.parse(plan["series"])
    params = context.get("params") or {}
    server = params["server"] if isinstance(params.get("server"), dict) else {}
    return Series(
        str(params.get("benchmark") or get_settings().benchmark),
        str(server.get("model") or DEFAULT_MODEL),
        str(params.get("lane") or DEFAULT_LANE),
    )


def on_failed_try(context: Context) -> None:
    """A failed try, retried (on_retry_callback) or final (on_failure_callback): the first of
    its series and night opens an INFRA alert through the outbox, later ones reply in its
    thread (delivered by the next dispatch), so a dead server is reported on its first try."""
    from omni_tasks.alerts.infra import FailedTry, task_failed
    from omni_tasks.dag_support.runtime import nightly_of

    ti = context["ti"]
    try:
        index = getattr(ti, "map_index", None)
        failed = FailedTry(
            series=series_of_task(context),
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            run_id=context["run_id"],
            nightly=nightly_of(context),
            try_number=ti.try_number,
            error=str(context.get("exception") or "unknown error"),
            map_index=-1 if index is None else int(index),
        )
        with results_db() as conn:
            task_failed(conn, failed)
    except Exception:  # a callback must never raise; the failure is in Airflow's log anyway
        log.exception("could not record the failure of %s as an INFRA alert", ti.task_id)


# Every task's callbacks (a DAG's default_args): each failed try alerts.
ON_FAILED_TRY = {"on_failure_callback": on_failed_try, "on_retry_callback": on_failed_try}
