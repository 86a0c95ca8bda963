"""Alert triage, as people do it in Perfherder and Skia Perf: acknowledge, mark invalid, mark a
duplicate or a downstream of another alert, ignore, link an issue, reopen.

Each action is kept in the alert's history (who, when, note, link), shown as a status line on
the Slack parent message (an `update` through the outbox, so delivery is idempotent and waits
for the parent) with a reply in its thread, and annotated on the dashboards (an event).
- acknowledged: someone owns it; nightly updates continue, the status line stays.
- invalid: the alert closes; a later night of the same key opens a new alert only when its
  candidate commit is one the invalid alert never covered.
- duplicate / downstream (`of` another alert): the same regression seen twice, or one caused by
  the other alert's; it closes like invalid (its key stays quiet until a new commit), and its
  status line names the alert that owns it.
- ignored: someone looked and will not act (Skia Perf's "ignore"); it closes like invalid.
- linked: an existing issue tracks it (`--link` required); the alert stays open.
- reopen: back to open, status cleared.

An action on an alert group (alerts/groups.py) applies to the group and to each member it
applies to (acknowledging a group owns every open member); closing the last open member of a
group closes the group.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.alerts import groups
from omni_tasks.alerts.blocks import Message, section
from omni_tasks.alerts.messages import CLOSING, status_line, with_status
from omni_tasks.contracts import AlertDetails, StoredAlert, Triage, TriageEntry
from omni_tasks.store import alerts as store

ACTIONS = {
    "ack": "acknowledged",
    "invalid": "invalid",
    "duplicate": "duplicate",
    "downstream": "downstream",
    "ignore": "ignored",
    "link": "linked",
    "reopen": "reopened",
}


class TriageError(ValueError):
    """An action that does not apply to the alert's state."""


@dataclass(frozen=True)
class Triaged:
    alert_id: int
    alert_key: str
    status: str
    state: str


def _check_link(link: str | None) -> None:
    if link is not None and not link.startswith(("https://", "http://")):
        raise TriageError(f"--link must be an http(s) URL, got {link!r}")
    if link is not None and (len(link) > 500 or any(c in link for c in "<> \n")):
        raise TriageError("--link must be one URL without spaces or angle brackets")


def triage(
    conn: psycopg.Connection[Any],
    alert_id: int,
    action: str,
    *,
    by: str,
    note: str | None = None,
    link: str | None = None,
    of: int | None = None,
    now: dt.datetime | None = None,
) -> Triaged:
    """Apply one triage action in one transaction (alert, history, outbox, event)."""
    if action not in ACTIONS:
        raise TriageError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
    if (action in ("duplicate", "downstream")) != (of is not None):
        raise TriageError(f"--of ALERT goes with duplicate and downstream only (got {action})")
    if of == alert_id:
        raise TriageError(f"alert #{alert_id} cannot be a {action} of itself")
    if action == "link" and link is None:
        raise TriageError("link needs the issue's URL (--issue URL)")
    _check_link(link)
    if note is not None and len(note) > 1000:
        raise TriageError("--note is limited to 1000 characters")
    now = now or dt.datetime.now(dt.UTC)
    with conn.transaction():
        done, kind = _apply(conn, alert_id, action, by, note, link, of, now)
        if kind == "group":
            for member in store.group_members(conn, alert_id):
                if _applies(action, member["state"], member["details"].triage_status):
                    _apply(conn, member["alert_id"], action, by, note, link, of, now)
    return done


def _applies(action: str, state: str, current: str | None) -> bool:
    if action == "reopen":
        return state != "open" and current in CLOSING
    return state == "open"


def _apply(
    conn: psycopg.Connection[Any],
    alert_id: int,
    action: str,
    by: str,
    note: str | None,
    link: str | None,
    of: int | None,
    now: dt.datetime,
) -> tuple[Triaged, str]:
    """One alert's action (the group's or a member's), and the alert's kind."""
    alert = store.alert_for_update(conn, alert_id)
    if alert is None:
        raise TriageError(f"no alert #{alert_id} (see `omni-tasks alerts list`)")
    state, status = alert.state, ACTIONS[action]
    details: AlertDetails = alert.details
    current = details.triage_status
    if action != "reopen" and state != "open":
        raise TriageError(f"alert #{alert_id} is {state}; reopen it first")
    if action == "reopen" and state == "open":
        raise TriageError(f"alert #{alert_id} is already open")
    if action == "reopen" and current not in CLOSING:
        raise TriageError(f"alert #{alert_id} was resolved by the nightly, not by a person")
    if of is not None and store.alert_for_update(conn, of) is None:
        raise TriageError(f"no alert #{of} to be a {action} of (see `omni-tasks alerts list`)")
    entry = TriageEntry(status, by, now.isoformat(), note, link, of)
    history = [*(details.triage.history if details.triage else []), entry]
    details = dataclasses.replace(details, triage=Triage(status, history))
    state = "resolved" if status in CLOSING else "open" if action == "reopen" else state
    try:
        resolved = alert.last_nightly if state == "resolved" else None
        store.update_triage(conn, alert_id, state, details, resolved)
    except psycopg.errors.UniqueViolation:
        raise TriageError(
            f"alert #{alert_id} cannot reopen: its key has another open alert"
        ) from None
    _announce(conn, alert, details, entry, len(history))
    if state == "resolved" and alert.kind != "group":
        groups.member_closed(conn, alert_id, alert.last_nightly)
    return Triaged(alert_id, alert.alert_key, status, state), alert.kind


def _announce(
    conn: psycopg.Connection[Any],
    alert: StoredAlert,
    details: AlertDetails,
    entry: TriageEntry,
    n: int,
) -> None:
    key, alert_id = alert.alert_key, alert.alert_id
    opened = alert.opened_nightly
    parent = store.parent_payload(conn, alert_id)
    if parent is not None:
        update = with_status(dict(parent["payload"]), details)
        store.enqueue(conn, f"{key}|{opened}|triage-{n}-update", alert_id, "update", update)
    line = status_line(entry)
    reply = {"op": "reply", **Message(line, [section(line)]).to_payload()}
    if parent is not None or alert.kind != "group":  # a group of one has no message
        store.enqueue(conn, f"{key}|{opened}|triage-{n}-reply", alert_id, "reply", reply)
    parts: list[str | None] = [*key.split("|"), *[None] * 6]
    if alert.kind == "group":  # group|candidate|baseline|night (alerts.keys)
        benchmark, branch, variant = None, parts[1], None
    elif parts[3] == "task":  # benchmark|model|lane|task|dag|run: no branch (alerts.keys)
        benchmark, branch, variant = parts[0], None, None
    else:  # benchmark|model|lane|candidate|baseline|variant|… (alerts.keys)
        benchmark, branch, variant = parts[0], parts[3], parts[5]
    note = f": {entry.note}" if entry.note else ""
    store.insert_event(
        conn,
        time=dt.datetime.fromisoformat(entry.at),
        kind=f"alert_{entry.status}",
        benchmark=benchmark,
        branch=branch,
        variant=variant,
        text=f"alert #{alert_id} {entry.status} by {entry.by}{note}",
        tags=["triage", entry.status],
        details={"alert_key": key, **entry.to_json()},
        dedup_key=f"triage|{alert_id}|{n}",
    )
