"""Alert groups (Chromeperf's) as triage and the report see them; the night joins and closes
them as it plans (night/alert_plan.py). A group closes when every member has recovered or
been closed by a person: a person's close is handled here."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import blocks, messages
from omni_tasks.alerts.blocks import GroupView
from omni_tasks.series import Series
from omni_tasks.store import alerts as store


def member_closed(conn: psycopg.Connection[Any], alert_id: int, night: dt.date) -> None:
    """A member was closed by a person: the group's message shows it, and the group closes
    when it was the last open member."""
    route = store.alert_route(conn, alert_id)
    if route is None or route.group_id is None:
        return
    group_id = route.group_id
    group = store.alert_for_update(conn, group_id)
    if group is None:
        return
    view = _view(conn, group_id)
    closes = group.state == "open" and not any(m.open for m in view.members)
    key = group.alert_key
    if closes:
        store.resolve_alert(conn, group_id, night)
        view = _view(conn, group_id)
        event = messages.group_event(
            group_id, key, night, "group_resolved", f"alert group {group_id} resolved"
        )
        store.insert_event(conn, **dataclasses.asdict(event))
    payload = messages.group_payload(view)
    if store.replace_pending_post(conn, group_id, payload):
        return
    store.enqueue(conn, f"{key}|closed-{alert_id}-{night}", group_id, "update", payload)
    if closes:
        text = f"resolved on {night}: all {len(view.members)} members recovered or were closed"
        reply = messages.msg(blocks.note(text), "reply")
        store.enqueue(conn, f"{key}|resolved-{night}", group_id, "reply", reply)


def of_night(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[GroupView]:
    """The groups a series had a member in on a night, as their messages show them."""
    return [_view(conn, g) for g in store.groups_of_night(conn, series, nightly)]


def _view(conn: psycopg.Connection[Any], group_id: int) -> GroupView:
    group = store.alert_for_update(conn, group_id)
    assert group is not None
    return messages.group_view(group, store.group_member_rows(conn, group_id))
