"""Fleet history from Buildkite (hourly, backfillable).

Imports the accuracy artifacts of the pipelines the deployment config's `buildkite:` section
names (vLLM-Omni's CUDA, AMD and NPU nightlies), each matched by the artifact rules to its
series (model × benchmark × lane), with upstream's own gate verdict; a gate that judged
nothing raises an INFRA alert; unknown artifacts are listed in the task log. Idempotent by
artifact, so every hour and any backfill import each artifact once.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, runtime, tasks


@dag(
    dag_id="omni_buildkite_sync",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["omni", "import"],
    default_args={**runtime.DEFAULT_ARGS, **callbacks.ON_FAILED_TRY},
    doc_md=__doc__,
)
def omni_buildkite_sync() -> None:
    @task
    def sync() -> dict:
        return tasks.buildkite_sync(get_current_context())

    @task
    def deliver() -> str:  # its INFRA alerts (a gate not evaluated)
        return tasks.dispatch_alerts(get_current_context())

    sync() >> deliver()


omni_buildkite_sync()
