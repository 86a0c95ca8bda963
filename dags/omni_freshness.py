"""Freshness watchdog: every branch of every series in the deployment config with no complete
nightly run by the deadline is an INFRA alert."""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, runtime, tasks


@dag(
    dag_id="omni_freshness",
    schedule="0 9 * * *",  # the nightly starts at 02:00 UTC; results are due by 09:00
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["omni", "seed-tts", "watchdog"],
    default_args={**runtime.DEFAULT_ARGS, **callbacks.ON_FAILED_TRY},
    doc_md=__doc__,
)
def omni_freshness() -> None:
    @task
    def check() -> list[str]:
        return tasks.check_freshness(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return tasks.dispatch_alerts(get_current_context())

    check() >> dispatch_alerts()


omni_freshness()
