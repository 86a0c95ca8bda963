"""Ablations (manual): which deploy override brings a confirmed regression back.

The confirmed night's candidate and baseline runs choose the clips (regressed plus a control
sample fine on both); at one fresh seed the baseline, the candidate and the candidate under each
ablation (one deploy override, merged by stage_id) run on those clips only. Each ablation is
judged "regression gone", "partial" or "unchanged"; the result is an event, a reply in the
alert's Slack thread and a section of the night's report.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks import dag_support as s


@dag(
    dag_id="omni_ablate",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["omni", "seed-tts", "ablate"],
    params=s.ablate_params(),
    default_args={**s.DEFAULT_ARGS, "retries": 1, "on_failure_callback": s.on_task_failure},
    doc_md=__doc__,
)
def omni_ablate() -> None:
    @task(
        queue="gpu",
        pool=s.GPU_POOL,
        pool_slots=s.GPU_SLOTS_PER_SERVER,
        execution_timeout=s.LONG_TASK_TIMEOUT,
    )
    def ablate() -> dict:
        return s.ablate(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return s.dispatch_alerts(get_current_context())

    @task(trigger_rule="one_failed", retries=0, on_failure_callback=None)
    def watcher() -> None:
        s.fail_the_run()

    result = ablate()
    alerts = dispatch_alerts()
    result >> alerts
    [result, alerts] >> watcher()


omni_ablate()
