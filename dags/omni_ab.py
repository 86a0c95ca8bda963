"""On-demand A/B (manual, the CLI's `omni-tasks ab`, or a PR label through the webhook).

Runs a config series' baseline target at `base_sha` and its other branch's target at
`head_sha`, interleaved, until the sequential paired rule decides or the budget ends, and
reports the verdict as a GitHub check run on the head commit (plus one Slack message). Only
the repositories in the config's `ab.repos`, only its series.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, params, runtime, tasks


@dag(
    dag_id="omni_ab",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["omni", "ab"],
    params=params.ab_params(),
    default_args={**runtime.DEFAULT_ARGS, **callbacks.ON_FAILED_TRY},
    doc_md=__doc__,
)
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
