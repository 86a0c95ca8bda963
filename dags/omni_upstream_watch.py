"""Upstream watch: weekly, vllm-omni releases on PyPI newer than the harness table (its window
and retry rules by version) are an INFRA alert; with `OMNI_CONFORMANCE_CHECKOUT` set, the
conformance suite runs against the newest and the alert says what differs. The same Monday, the
weekly standing-failures digest of each series the config's `ledger_digest:` opts in."""

from __future__ import annotations

import pendulum
from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import tasks
from omni_tasks.dag_support.one_series import omni_dag


@omni_dag(
    "omni_upstream_watch",
    schedule="0 6 * * 1",  # Mondays, before the week's triage
    tags=["watchdog"],
    doc=__doc__,
    start_date=pendulum.datetime(2026, 11, 2, tz="UTC"),
)
def omni_upstream_watch() -> None:
    @task
    def watch() -> list[str]:
        return tasks.watch_upstream(get_current_context())

    @task
    def ledger_digest() -> list[str]:
        return tasks.ledger_digest(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return tasks.dispatch_alerts(get_current_context())

    [watch(), ledger_digest()] >> dispatch_alerts()


omni_upstream_watch()
