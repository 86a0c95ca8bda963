"""INFRA alerts raised outside the night's decision (a failed task, a missing night, a
broken import): one message each, through the outbox."""

from __future__ import annotations

from typing import Any

import psycopg

from omni_tasks.alerts import blocks
from omni_tasks.alerts.messages import msg
from omni_tasks.store.alerts import enqueue


def raise_infra(
    conn: psycopg.Connection[Any],
    key: str,
    title: str,
    reasons: list[str],
    dedup: str,
    ids: dict[str, str] | None = None,
    links: dict[str, str] | None = None,
) -> int | None:
    """An infra alert from outside the gate (task failure, missing night): one message per
    `dedup` value, never twice; `ids` are shown copy-pasteable."""
    payload = msg(blocks.infra(title, reasons, links, ids=ids), "post")
    return enqueue(conn, f"{key}|{dedup}", None, "post", payload)
