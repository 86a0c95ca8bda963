"""seed-TTS bisect (manual): the first bad commit between a good and a bad one.

Endpoints are run on every clip; midpoints on the discriminating clips (regressed set plus a
control sample) with a sequential test per step, repeated with more seeds while undecided.
Per-step evidence is stored as events and, when an alert is open, replied in its Slack thread.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks import dag_support as s


@dag(
    dag_id="seed_tts_bisect",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["omni", "seed-tts", "bisect"],
    params=s.bisect_params(),
    default_args={**s.DEFAULT_ARGS, "retries": 1, "on_failure_callback": s.on_task_failure},
    doc_md=__doc__,
)
def seed_tts_bisect() -> None:
    @task(
        queue="gpu",
        pool=s.GPU_POOL,
        pool_slots=s.GPU_SLOTS_PER_SERVER,
        execution_timeout=s.LONG_TASK_TIMEOUT,
    )
    def bisect() -> dict:
        return s.bisect(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return s.dispatch_alerts(get_current_context())

    @task(trigger_rule="one_failed", retries=0, on_failure_callback=None)
    def watcher() -> None:
        s.fail_the_run()

    result = bisect()
    alerts = dispatch_alerts()
    result >> alerts
    [result, alerts] >> watcher()


seed_tts_bisect()
