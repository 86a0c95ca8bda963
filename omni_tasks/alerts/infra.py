"""INFRA alerts raised outside the night's decision (a failed task, a missing night, a
broken import), through the outbox: one message each, or, for a failed task, one alert per
series and night whose later failed tries reply in its thread."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.alerts import blocks, keys
from omni_tasks.alerts.messages import msg
from omni_tasks.evidence.links import task_log_url
from omni_tasks.series import Series
from omni_tasks.store.alerts import enqueue, open_or_insert_alert
from omni_tasks.trust.redact import redact


def raise_infra(
    conn: psycopg.Connection[Any],
    key: str,
    title: str,
    reasons: list[str],
    dedup: str,
    links: dict[str, str] | None = None,
) -> int | None:
    """An infra alert from outside the gate (a missing night, a broken import): one message
    per `dedup` value, never twice."""
    payload = msg(blocks.infra(title, reasons, links), "post")
    return enqueue(conn, f"{key}|{dedup}", None, "post", payload)


@dataclass(frozen=True)
class FailedTry:
    """One failed try of an Airflow task (retried or final), as its callback saw it."""

    series: Series
    dag_id: str
    task_id: str
    run_id: str
    nightly: dt.date
    try_number: int
    error: str
    map_index: int = -1


def task_failed(conn: psycopg.Connection[Any], t: FailedTry) -> int:
    """A failed try: the first of its series and night opens an INFRA alert (its message
    says what to run next); every later one, of any task of that run, replies in its thread.
    Idempotent per try. The alert's id."""
    key = keys.task_failure(t.series.key, t.dag_id, t.run_id)
    alert_id, opened = open_or_insert_alert(conn, key, "infra", t.nightly)
    ids = {"series": t.series.label, "DAG": t.dag_id, "task": t.task_id, "run": t.run_id}
    ids["try"] = str(t.try_number)
    if t.map_index >= 0:
        ids["map index"] = str(t.map_index)
    log_url = task_log_url(t.dag_id, t.run_id, t.task_id, t.try_number, t.map_index)
    links = {"Task log": log_url} if log_url else None
    reasons = [redact(t.error)[:1000]]  # redacted, then cut
    what = f"{t.dag_id}.{t.task_id} try {t.try_number}"
    if opened:
        steps = blocks.next_line(alert_id, next_steps(t, alert_id))
        title = f"INFRA {t.series.label}: {what} failed"
        message, kind = blocks.infra(title, reasons, links, ids, steps), "post"
    else:
        message, kind = blocks.infra(f"{what} failed too", reasons, links, ids), "reply"
    dedup = f"{key}|{t.task_id}|{t.map_index}|{t.try_number}"
    enqueue(conn, dedup, alert_id, kind, msg(message, kind))
    conn.commit()
    return alert_id


def next_steps(t: FailedTry, alert_id: int) -> tuple[str, ...]:
    """Own the alert, and list the series' runs of the night (a failed run's key, for
    `omni-tasks runs show`)."""
    s = t.series
    return (
        f"omni-tasks alerts ack {alert_id} --note '…'",
        f"omni-tasks runs list --benchmark {s.benchmark} --model {s.model} --lane {s.lane} "
        f"--nightly {t.nightly}",
    )
