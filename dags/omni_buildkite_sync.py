"""Fleet history from Buildkite (hourly, backfillable).

Imports the accuracy artifacts of the pipelines the deployment config's `buildkite:` section
names (vLLM-Omni's CUDA, AMD and NPU nightlies), each matched by the artifact rules to its
series (model × benchmark × lane), with upstream's own gate verdict; a gate that judged
nothing raises an INFRA alert; unknown artifacts are listed in the task log. Idempotent by
artifact, so every hour and any backfill import each artifact once.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import tasks
from omni_tasks.dag_support.one_series import omni_dag


@omni_dag(
    "omni_buildkite_sync", schedule="@hourly", tags=["import"], doc=__doc__, max_active_runs=1
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
