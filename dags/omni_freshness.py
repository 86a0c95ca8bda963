"""Freshness watchdog: every branch of every series in the deployment config with no complete
nightly run by the deadline is an INFRA alert."""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import tasks
from omni_tasks.dag_support.one_series import omni_dag


# The nightly starts at 02:00 UTC; results are due by 09:00.
@omni_dag("omni_freshness", schedule="0 9 * * *", tags=["seed-tts", "watchdog"], doc=__doc__)
def omni_freshness() -> None:
    @task
    def check() -> list[str]:
        return tasks.check_freshness(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return tasks.dispatch_alerts(get_current_context())

    check() >> dispatch_alerts()


omni_freshness()
