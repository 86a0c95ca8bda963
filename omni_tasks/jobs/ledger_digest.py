"""The weekly standing-failures digest (what `omni_upstream_watch` calls on Mondays): for each
series the deployment config opts in (`ledger_digest:`), the chronic set by mode, the items that
joined it and those fixed (with their commit range) since a week before, as one Slack message
through the alerts' outbox (its delivery, redaction and idempotency)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import blocks
from omni_tasks.alerts.blocks import Message
from omni_tasks.ledger.digest import Digest, commit_range, digest, headline, mode_of, rate
from omni_tasks.series import Series
from omni_tasks.store import alerts as outbox
from omni_tasks.store import ledger as store

WEEK = dt.timedelta(days=7)


def digest_message(d: Digest, series: Series) -> Message:
    """One series' week: the chronic count by mode, what joined, what was fixed and where."""
    joined = [
        f"{i.utt_id}: {mode_of(i)}, broken {rate(i)}"
        + (f", chronic since {i.since} ({commit_range(i)})" if i.since else "")
        for i in d.joined
    ]
    fixed = [f"{i.utt_id}: fixed in {commit_range(i)} (was {mode_of(i)})" for i in d.fixed]
    since = f"since {d.since}" if d.since else "(first digest)"
    return blocks.digest_message(
        f":clipboard: Standing failures · {series.label} · {d.branch} — week to {d.last_night}",
        [
            (headline(d), [f"{m}: {n}" for m, n in d.by_mode.items()]),
            (f"New chronic items {since}: {len(joined)}", joined),
            (f"Fixed items {since}: {len(fixed)}", fixed),
            (
                f"omni-tasks items chronic --benchmark {series.benchmark} --model "
                f"{series.model} --lane {series.lane} --branch {d.branch}",
                [],
            ),
        ],
    )


def week_digest(conn: psycopg.Connection[Any], series: Series, branch: str, nights: int) -> Digest:
    """The series' ledger now against the same ledger read a week earlier."""
    now = store.load(conn, series, branch=branch, nights=nights)
    before = store.load(conn, series, branch=branch, nights=nights, until=now.last_night - WEEK)
    return digest(now, before if before.items else None)


def send_digests(
    conn: psycopg.Connection[Any], series: list[Series], branch: str, nights: int, week: str
) -> list[str]:
    """Queue one digest per series for `week` (an ISO week: a retried task queues nothing
    twice); the series' headlines."""
    lines = []
    for s in series:
        d = week_digest(conn, s, branch, nights)
        message = digest_message(d, s)
        key = f"ledger-digest|{s.key}|{branch}|{week}"
        outbox.enqueue(conn, key, None, "post", {"op": "post", **message.to_payload()})
        conn.commit()
        lines.append(f"{s.label} {branch}: {headline(d)}")
    return lines
