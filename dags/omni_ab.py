"""On-demand A/B (manual, the CLI's `omni-tasks ab`, or a PR label through the webhook).

Runs a config series' baseline target at `base_sha` and its other branch's target at
`head_sha`, interleaved, until the sequential paired rule decides or the budget ends, and
reports the verdict as a GitHub check run on the head commit (plus one Slack message). Only
the repositories in the config's `ab.repos`, only its series.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import params, runtime, tasks
from omni_tasks.dag_support.one_series import omni_dag


@omni_dag("omni_ab", schedule=None, tags=["ab"], doc=__doc__, params=params.ab_params())
def omni_ab() -> None:
    @task(
        queue="gpu",
        pool=runtime.GPU_POOL,
        pool_slots=1,
        execution_timeout=runtime.LONG_TASK_TIMEOUT,
    )
    def ab() -> dict:
        return tasks.ab(get_current_context())

    ab()


omni_ab()
