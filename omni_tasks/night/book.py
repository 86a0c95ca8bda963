"""The alert state as the night's planning changes it (a `Book`), and what planning wrote:
alert rows, messages, events and transitions. Pure: built from NightInputs."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omni_tasks.alerts import blocks
from omni_tasks.alerts.messages import msg, noon
from omni_tasks.contracts import AlertDetails, JsonObject, StoredAlert
from omni_tasks.contracts.night import (
    AlertOp,
    AlertTransition,
    Event,
    GroupMemberRow,
    KeyNight,
    Message,
    NightInputs,
    NightKey,
    PostRewrite,
    night_key,
)

if TYPE_CHECKING:
    from omni_tasks.store.runs import NightRun


@dataclass
class Book:
    """The alert state as planning changes it, and what planning wrote."""

    inputs: NightInputs
    nights: list[KeyNight]
    alerts: dict[int, StoredAlert] = field(default_factory=dict)
    open_by_key: dict[str, int] = field(default_factory=dict)
    members: dict[int, GroupMemberRow] = field(default_factory=dict)  # regression alerts
    groups: dict[int, list[int]] = field(default_factory=dict)  # members' ids, oldest first
    pending_posts: set[int] = field(default_factory=set)  # groups' posts not sent yet
    opened_on: dict[int, NightKey] = field(default_factory=dict)
    next_id: int = 0
    ops: list[AlertOp] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    rewrites: list[PostRewrite] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    transitions: list[AlertTransition] = field(default_factory=list)

    @classmethod
    def of(cls, inputs: NightInputs, nights: list[KeyNight]) -> Book:
        book = cls(inputs, nights, next_id=inputs.next_alert_id)
        for a in inputs.open_alerts.values():
            book.alerts[a.alert_id] = a
            book.open_by_key[a.alert_key] = a.alert_id
        for g in inputs.groups:
            book.alerts[g.group.alert_id] = g.group
            book.groups[g.group.alert_id] = [m.alert.alert_id for m in g.members]
            if g.pending_post:
                book.pending_posts.add(g.group.alert_id)
        for m in [*inputs.lone, *(m for g in inputs.groups for m in g.members)]:
            book.alerts.setdefault(m.alert.alert_id, m.alert)  # an open alert's row as loaded
            book.members[m.alert.alert_id] = m
        return book

    # -------------------------------------------------------------- alert rows
    def insert(self, key: str, kind: str, night: dt.date, details: AlertDetails) -> int:
        alert_id, self.next_id = self.next_id, self.next_id + 1
        row = StoredAlert(
            alert_id=alert_id,
            alert_key=key,
            kind=kind,
            state="open",
            opened_nightly=night,
            last_nightly=night,
            resolved_nightly=None,
            channel=None,
            parent_ts=None,
            details=details,
            created_at=dt.datetime.min,
            group_id=None,
            range_from=None,
            range_to=None,
            hold_until=None,
            thread_ts=None,
        )
        self.alerts[alert_id] = row
        if kind != "group":
            self.open_by_key[key] = alert_id
        self.ops.append(AlertOp("insert", alert_id, key, kind, night, details))
        return alert_id

    def update(self, alert_id: int, **changes: object) -> StoredAlert:
        row = dataclasses.replace(self.alerts[alert_id], **changes)  # type: ignore[arg-type]
        self.alerts[alert_id] = row
        if alert_id in self.members:
            self.members[alert_id] = dataclasses.replace(self.members[alert_id], alert=row)
        return row

    def touch(self, alert_id: int, night: dt.date, commits: list[str] | None = None) -> None:
        row = self.alerts[alert_id]
        details = (
            row.details
            if commits is None
            else dataclasses.replace(row.details, commits=list(commits))
        )
        self.update(alert_id, last_nightly=night, details=details)
        self.ops.append(AlertOp("touch", alert_id, nightly=night, commits=commits))

    def resolve(self, alert_id: int, night: dt.date) -> None:
        row = self.update(alert_id, state="resolved", resolved_nightly=night)
        if self.open_by_key.get(row.alert_key) == alert_id:
            del self.open_by_key[row.alert_key]
        self.ops.append(AlertOp("resolve", alert_id, nightly=night))

    def open_alert(self, key: str) -> StoredAlert | None:
        found = self.open_by_key.get(key)
        return None if found is None else self.alerts[found]

    # -------------------------------------------------------------- messages
    def enqueue(self, key: str, alert_id: int | None, kind: str, payload: JsonObject) -> None:
        self.messages.append(Message(key, alert_id, kind, payload))

    def say(self, key: str, alert_id: int, kind: str, message: blocks.Message) -> None:
        """Queue a message as the outbox keeps it (a post, an update or a reply)."""
        self.enqueue(key, alert_id, kind, msg(message, kind))

    def event(self, kind: str, d: KeyNight, text: str, key: str) -> None:
        self.events.append(
            Event(
                time=noon(d.nightly),
                kind=kind,
                benchmark=d.benchmark,
                branch=d.candidate_branch,
                variant=d.variant,
                text=text,
                tags=[kind, d.candidate_branch],
                details={"alert_key": key},
                dedup_key=f"{kind}|{key}|{d.nightly}",
            )
        )

    def moved(self, kind: str, alert_id: int, d: KeyNight, key: str, detail: str = "") -> None:
        group = self.alerts[alert_id].group_id
        self.transitions.append(AlertTransition(kind, key, alert_id, d.nightly, detail, group))

    # -------------------------------------------------------------- decisions
    def pair_nights(self, d: KeyNight) -> list[KeyNight]:
        return [k for k in self.nights if k.pair == d.pair]

    def verdicts_since(self, d: KeyNight, after: dt.date, until: dt.date) -> list[KeyNight]:
        return [k for k in self.pair_nights(d) if after < k.nightly <= until]

    def opener(self, alert: StoredAlert) -> KeyNight | None:
        """The decision an alert opened on, as it stands now (None: it is gone)."""
        ref = self.opened_on.get(alert.alert_id)
        if ref is not None:
            return next((k for k in self.nights if night_key(k) == ref), None)
        decision_id = alert.details.decision_id
        now = next((k for k in self.nights if k.decision_id == decision_id), None)
        return now or self.inputs.openers.get(decision_id or 0)

    def run(self, run_id: int | None) -> NightRun | None:
        return None if run_id is None else self.inputs.run_rows.get(run_id)

    def audio_uri(self, run_id: int, utt_id: str) -> str | None:
        found = self.inputs.audio.get((run_id, utt_id))
        if found is not None:
            return found
        for g in self.inputs.graded.values():
            if g.run.run_id == run_id:
                return next((c.audio_uri for c in g.clips if c.utt_id == utt_id), None)
        return None
