"""Alerts, their outbox and events in the results DB: the statements the alert lifecycle,
triage and the Slack dispatcher run (they plan and deliver; this module reads and writes)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Unpack

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.contracts import AlertDetails, BisectPlan, DecisionKey, JsonObject, StoredAlert
from omni_tasks.contracts.night import GroupMemberRow
from omni_tasks.series import Series
from omni_tasks.store.db import SeriesFilter, filtered, one, typed, typed_one
from omni_tasks.store.queries import sql
from omni_tasks.trust.redact import redact_tree

Row = dict[str, Any]


@dataclass(frozen=True)
class OutboxMessage:
    """A message waiting in the outbox (pending_outbox.sql)."""

    message_id: int
    idempotency_key: str
    alert_id: int | None
    kind: str  # post, update, reply, upload
    payload: JsonObject  # a Slack payload (text, blocks) or an upload's file and title
    state: str  # pending | sending (its outcome unknown: looked up before re-sending)
    attempts: int
    held: bool  # an opening post whose triage delay still runs


@dataclass(frozen=True)
class AlertRoute:
    """Where an alert's messages go (alert_route.sql)."""

    kind: str
    parent_ts: str | None
    thread_ts: str | None
    group_id: int | None
    group_ts: str | None


GROUP_FIELDS = ("summary", "last_good", "first_bad")  # AlertDetails' fields a member sets


# ---------------------------------------------------------------- alerts


def insert_alert(
    conn: psycopg.Connection[Any],
    key: str,
    kind: str,
    nightly: dt.date,
    details: AlertDetails | None = None,
    range_from: dt.date | None = None,
    range_to: dt.date | None = None,
) -> int:
    """A new open alert, its id; a group (kind `group`) has a range of nights and no details,
    its members join it next (join_group.sql)."""
    doc = None if kind == "group" else Jsonb((details or AlertDetails()).to_json())
    args = {"alert_key": key, "kind": kind, "nightly": nightly, "details": doc}
    args |= {"range_from": range_from, "range_to": range_to}
    return int(one(conn.execute(sql("insert_alert"), args))["alert_id"])


def open_or_insert_alert(
    conn: psycopg.Connection[Any], key: str, kind: str, nightly: dt.date
) -> tuple[int, bool]:
    """`key`'s open alert, inserted when it has none (True: inserted now), under the night's
    alert lock (night_lock.sql): the night's planner reads the next alert id before it inserts,
    and two tries failing at once must open one alert."""
    conn.execute(sql("night_lock"))
    row = conn.execute(sql("open_alert_of_key"), {"alert_key": key}).fetchone()
    if row is not None:
        return int(row["alert_id"]), False
    return insert_alert(conn, key, kind, nightly), True


def touch_alert(
    conn: psycopg.Connection[Any],
    alert_id: int,
    nightly: dt.date,
    commits: list[str] | None = None,
) -> None:
    """Another night of an open alert (and, given, the candidate commits it now covers)."""
    merged = {} if commits is None else {"commits": commits}
    conn.execute(
        sql("touch_alert"), {"alert_id": alert_id, "nightly": nightly, "details": Jsonb(merged)}
    )


def resolve_alert(conn: psycopg.Connection[Any], alert_id: int, nightly: dt.date) -> None:
    conn.execute(sql("resolve_alert"), {"alert_id": alert_id, "nightly": nightly})


def alert_for_update(conn: psycopg.Connection[Any], alert_id: int) -> StoredAlert | None:
    row = conn.execute(sql("alert_for_update"), {"alert_id": alert_id}).fetchone()
    return None if row is None else StoredAlert.of(row)


def update_triage(
    conn: psycopg.Connection[Any],
    alert_id: int,
    state: str,
    details: AlertDetails,
    resolved_nightly: dt.date | None,
) -> None:
    conn.execute(
        sql("update_alert_triage"),
        {
            "alert_id": alert_id,
            "state": state,
            "details": Jsonb(details.to_json()),
            "resolved_nightly": resolved_nightly,
        },
    )


def parent_payload(conn: psycopg.Connection[Any], alert_id: int) -> Row | None:
    return conn.execute(sql("alert_parent_payload"), {"alert_id": alert_id}).fetchone()


def alert_route(conn: psycopg.Connection[Any], alert_id: int) -> AlertRoute | None:
    return typed_one(conn, AlertRoute, "alert_route", alert_id=alert_id)


# ---------------------------------------------------------------- groups


def set_member_range(
    conn: psycopg.Connection[Any],
    alert_id: int,
    range_from: dt.date,
    range_to: dt.date,
    delay_s: int,
    details: AlertDetails,
) -> None:
    """A regression alert's nights, its commit range and line for a group, and its opening
    post's hold."""
    args = {"alert_id": alert_id, "range_from": range_from, "range_to": range_to}
    doc = Jsonb({k: v for k, v in details.to_json().items() if k in GROUP_FIELDS})
    conn.execute(sql("set_member_range"), {**args, "delay_s": delay_s, "details": doc})


def join_group(
    conn: psycopg.Connection[Any],
    group_id: int,
    member_id: int,
    nightly: dt.date,
    range_from: dt.date,
    range_to: dt.date,
    delay_s: int,
) -> None:
    conn.execute(
        sql("join_group"),
        {
            "group_id": group_id,
            "member_id": member_id,
            "nightly": nightly,
            "range_from": range_from,
            "range_to": range_to,
            "delay_s": delay_s,
        },
    )


def group_members(conn: psycopg.Connection[Any], group_id: int) -> list[Row]:
    rows = conn.execute(sql("group_members"), {"group_id": group_id})
    return [{**r, "details": AlertDetails.from_json(r["details"] or {})} for r in rows]


def group_member_rows(conn: psycopg.Connection[Any], group_id: int) -> list[GroupMemberRow]:
    """A group's members, oldest first, with the series of the decision that opened each."""
    return [member_of(r) for r in conn.execute(sql("group_members"), {"group_id": group_id})]


def member_of(row: Row) -> GroupMemberRow:
    """A member alert's row with the series and branches of the decision that opened it."""
    series = Series.of(row) if row["benchmark"] else None
    return GroupMemberRow(
        StoredAlert.of(row), series, row["candidate_branch"], row["baseline_branch"]
    )


def groups_of_night(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[int]:
    """The groups a series had a member in on a night."""
    rows = conn.execute(sql("groups_of_night"), {**series.args(), "nightly": nightly})
    return [int(r["alert_id"]) for r in rows]


def replace_pending_post(conn: psycopg.Connection[Any], alert_id: int, payload: JsonObject) -> bool:
    """Rewrite an alert's opening post while it is still pending; False once it is sent."""
    args = {"alert_id": alert_id, "payload": Jsonb(redact_tree(payload))}
    return conn.execute(sql("replace_pending_post"), args).fetchone() is not None


def held_until(conn: psycopg.Connection[Any], series: Series | None = None) -> dt.datetime | None:
    """When the last opening post held by a triage delay may go out (of `series`' alerts, or
    of every alert)."""
    args = series.args() if series is not None else filtered({})
    row = conn.execute(sql("held_until"), args).fetchone()
    return None if row is None else row["until"]


def record_bisect(conn: psycopg.Connection[Any], alert_id: int, plan: BisectPlan) -> None:
    """The auto-bisect planned for an alert, kept in its details (planned once: merged as a
    top-level key of AlertDetails)."""
    doc = Jsonb({"bisect": plan.to_json()})
    conn.execute(sql("merge_alert_details"), {"alert_id": alert_id, "details": doc})


@dataclass(frozen=True)
class OpenRegression:
    """An open regression alert with the key of the decision that opened it."""

    alert_id: int
    alert_key: str
    opened_nightly: dt.date
    details: AlertDetails
    key: DecisionKey

    @property
    def candidate_branch(self) -> str:
        return self.key.candidate_branch

    @property
    def baseline_branch(self) -> str:
        return self.key.baseline_branch


def open_regression_alerts(conn: psycopg.Connection[Any], series: Series) -> list[OpenRegression]:
    return [
        OpenRegression(
            r["alert_id"],
            r["alert_key"],
            r["opened_nightly"],
            AlertDetails.from_json(r["details"] or {}),
            DecisionKey(
                Series.of(r),
                r["candidate_branch"],
                r["baseline_branch"],
                r["variant"],
                r["policy_version"],
            ),
        )
        for r in conn.execute(sql("open_regression_alerts"), series.args())
    ]


def bisect_alert(conn: psycopg.Connection[Any], alert_id: int | None, pattern: str) -> Row | None:
    """The alert a bisect reports to: the one that started it, else the pair's open one."""
    args = {"alert_id": alert_id, "pattern": pattern}
    return conn.execute(sql("bisect_alert"), args).fetchone()


# ---------------------------------------------------------------- outbox
def enqueue(
    conn: psycopg.Connection[Any],
    key: str,
    alert_id: int | None,
    kind: str,
    payload: JsonObject,
) -> int | None:
    """A message to deliver, once per idempotency key: None when the key was already queued.
    The payload passes the redaction gate first (it quotes servers' logs and errors)."""
    row = conn.execute(
        sql("insert_outbox"),
        {
            "idempotency_key": key,
            "alert_id": alert_id,
            "kind": kind,
            "payload": Jsonb(redact_tree(payload)),
        },
    ).fetchone()
    return None if row is None else int(row["message_id"])


def pending_messages(conn: psycopg.Connection[Any]) -> list[OutboxMessage]:
    return typed(conn, OutboxMessage, "pending_outbox")


def undelivered_count(conn: psycopg.Connection[Any]) -> int:
    return int(one(conn.execute(sql("outbox_undelivered_count")))["n"])


def try_dispatch_lock(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(sql("try_dispatch_lock")).fetchone()
    return bool(row and row["ok"])


def release_dispatch_lock(conn: psycopg.Connection[Any]) -> None:
    conn.execute(sql("release_dispatch_lock"))


def mark_sending(conn: psycopg.Connection[Any], message_id: int) -> None:
    conn.execute(sql("outbox_sending"), {"message_id": message_id})


def mark_unsent(conn: psycopg.Connection[Any], message_id: int, error: str) -> None:
    conn.execute(sql("outbox_unsent_attempt"), {"message_id": message_id, "error": error})


def mark_failed_attempt(
    conn: psycopg.Connection[Any], message_id: int, state: str, error: str
) -> None:
    conn.execute(
        sql("outbox_failed_attempt"), {"message_id": message_id, "state": state, "error": error}
    )


def mark_sent(
    conn: psycopg.Connection[Any],
    m: OutboxMessage,
    ts: str | None,
    channel: str,
    thread: str | None = None,
) -> None:
    """A delivered message; a delivered opening post becomes its alert's parent (`thread`: the
    group's thread it was posted in)."""
    conn.execute(sql("outbox_sent"), {"message_id": m.message_id, "ts": ts})
    if m.kind == "post" and m.alert_id is not None:
        args = {"alert_id": m.alert_id, "ts": ts, "channel": channel, "thread": thread}
        conn.execute(sql("alert_parent_posted"), args)


# ---------------------------------------------------------------- events
def ablations_of_night(
    conn: psycopg.Connection[Any], series_key: str, nightly: dt.date
) -> list[dict[str, Any]]:
    """A series' stored ablation results of one night (the report's section), newest first."""
    rows = conn.execute(sql("ablations_of_night"), {"series": series_key, "nightly": nightly})
    return [dict(r["details"]) for r in rows]


def insert_event(
    conn: psycopg.Connection[Any],
    *,
    time: dt.datetime,
    kind: str,
    benchmark: str | None,
    branch: str | None,
    variant: str | None,
    text: str,
    tags: list[str],
    details: Mapping[str, object],  # stored as JSON
    dedup_key: str | None,
) -> None:
    """An annotation / known break; its dedup key keeps re-runs from adding it twice."""
    conn.execute(
        sql("insert_event"),
        {
            "time": time,
            "kind": kind,
            "benchmark": benchmark,
            "branch": branch,
            "variant": variant,
            "text": text,
            "tags": tags,
            "details": Jsonb(details),
            "dedup_key": dedup_key,
        },
    )


def unannotated_events(conn: psycopg.Connection[Any]) -> list[Row]:
    """Events not yet pushed to Grafana as annotations, oldest first."""
    return conn.execute(sql("unannotated_events")).fetchall()


def set_annotation_id(conn: psycopg.Connection[Any], event_id: int, annotation_id: Any) -> None:
    conn.execute(sql("set_annotation_id"), {"event_id": event_id, "annotation_id": annotation_id})


def overview(
    conn: psycopg.Connection[Any],
    *,
    state: str | None = None,
    since: dt.date | None = None,
    **series: Unpack[SeriesFilter],
) -> list[Row]:
    """Alerts, open first, with their triage status and message counts; each filter applies
    when given (`since`: alerts seen on or after that night)."""
    params = filtered(series, state=state, since=since)
    return conn.execute(sql("alerts_overview"), params).fetchall()


def sent_messages(conn: psycopg.Connection[Any]) -> list[Row]:
    return conn.execute(sql("sent_messages")).fetchall()
