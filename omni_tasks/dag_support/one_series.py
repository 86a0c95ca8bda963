"""The shape of our DAGs: what every one shares (`omni_dag`), and a one-series manual DAG
(bisect, ablate): one GPU task that runs the job on the form's series, the alert dispatch after
it, and the watcher that fails the run when either failed. The DAG files name the job, its form
and their words, and build the DAG (the function returned, as `@dag` returns it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from omni_tasks.dag_support import callbacks, runtime, tasks

if TYPE_CHECKING:
    from airflow.sdk import Context, Param

    from omni_tasks.contracts import JsonObject


def omni_dag(
    dag_id: str,
    *,
    schedule: str | None,
    tags: list[str],
    doc: str | None,
    start_date: Any = None,
    retries: int = runtime.DEFAULT_ARGS["retries"],
    **kwargs: Any,
) -> Any:
    """Airflow's `@dag` with what every DAG of ours shares: tagged `omni`, never catching up,
    started 2026-11-01 UTC unless `start_date` says, each task's default args and failure
    callbacks."""
    import pendulum
    from airflow.sdk import dag

    return dag(
        dag_id=dag_id,
        schedule=schedule,
        start_date=start_date or pendulum.datetime(2026, 11, 1, tz="UTC"),
        catchup=False,
        tags=["omni", *tags],
        default_args={**runtime.DEFAULT_ARGS, "retries": retries, **callbacks.ON_FAILED_TRY},
        doc_md=doc,
        **kwargs,
    )


def one_series_dag(
    dag_id: str,
    doc: str,
    tags: list[str],
    form: dict[str, Param],
    job: Callable[[Context], JsonObject],
) -> Any:
    from airflow.sdk import get_current_context, task

    @omni_dag(dag_id, schedule=None, tags=tags, doc=doc, params=form, retries=1)
    def one_series() -> None:
        @task(
            task_id=job.__name__,
            queue="gpu",
            pool=runtime.GPU_POOL,
            pool_slots=runtime.GPU_SLOTS_PER_SERVER,
            execution_timeout=runtime.LONG_TASK_TIMEOUT,
        )
        def run_job() -> JsonObject:
            return job(get_current_context())

        @task(trigger_rule="all_done")
        def dispatch_alerts() -> str:
            return tasks.dispatch_alerts(get_current_context())

        @task(trigger_rule="one_failed", retries=0, on_failure_callback=None)
        def watcher() -> None:
            callbacks.fail_the_run()

        result = run_job()
        alerts = dispatch_alerts()
        result >> alerts
        [result, alerts] >> watcher()

    return one_series
