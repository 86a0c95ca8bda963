"""Upstream watch: weekly, vllm-omni releases on PyPI newer than the harness table (its window
and retry rules by version) are an INFRA alert; with `OMNI_CONFORMANCE_CHECKOUT` set, the
conformance suite runs against the newest and the alert says what differs. The same Monday, the
weekly standing-failures digest of each series the config's `ledger_digest:` opts in."""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, runtime, tasks


@dag(
    dag_id="omni_upstream_watch",
    schedule="0 6 * * 1",  # Mondays, before the week's triage
    start_date=pendulum.datetime(2026, 11, 2, tz="UTC"),
    catchup=False,
    tags=["omni", "watchdog"],
    default_args={**runtime.DEFAULT_ARGS, **callbacks.ON_FAILED_TRY},
    doc_md=__doc__,
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
