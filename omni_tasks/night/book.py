"""The alert state as the night's planning changes it (a `Book`), and what planning wrote:
alert rows, messages, events and transitions. Pure: built from NightInputs."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omni_tasks.contracts import AlertDetails, JsonObject, StoredAlert, StoredDecision
from omni_tasks.contracts.night import (
    AlertOp,
    AlertTransition,
    Event,
    GroupMemberRow,
    KeyNight,
    Message,
    NightInputs,
    PostRewrite,
)

if TYPE_CHECKING:
    from omni_tasks.records import NightRun


def stored(k: KeyNight, inputs: NightInputs) -> StoredDecision:
    """A window night as the lifecycle reads a stored decision."""
    s = inputs.series
    return StoredDecision(
        decision_id=k.decision_id,
        benchmark=s.benchmark,
        model=s.model,
        lane=s.lane,
        nightly=k.nightly,
        candidate_branch=k.candidate_branch,
        baseline_branch=k.baseline_branch,
        variant=k.variant,
        verdict=k.verdict,
        confirmed=k.confirmed,
        mcnemar_p_holm=k.mcnemar_p_holm,
        reasons=k.reasons,
        policy_version=inputs.policy_version,
        comparison=k.comparison,
        tau=k.tau,
        candidate_run_id=k.candidate_run_id,
        candidate_run_key=k.candidate_run_key,
        baseline_run_id=k.baseline_run_id,
        airflow_dag_id=k.airflow_dag_id,
        airflow_run_id=k.airflow_run_id,
    )


@dataclass
class Group:
    row: StoredAlert
    members: list[int]  # alert ids, oldest first
    pending_post: bool  # its opening post is not sent yet (stored, or planned tonight)


@dataclass
class Book:
    """The alert state as planning changes it, and what planning wrote."""

    inputs: NightInputs
    nights: list[KeyNight]
    alerts: dict[int, StoredAlert] = field(default_factory=dict)
    open_by_key: dict[str, int] = field(default_factory=dict)
    members: dict[int, GroupMemberRow] = field(default_factory=dict)  # regression alerts
    groups: dict[int, Group] = field(default_factory=dict)
    opened_on: dict[int, tuple[dt.date, str, str, str]] = field(default_factory=dict)
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
        for m in inputs.lone:
            book.alerts.setdefault(m.alert.alert_id, m.alert)
            book.members[m.alert.alert_id] = m
        for g in inputs.groups:
            book.alerts[g.group.alert_id] = g.group
            ids = [m.alert.alert_id for m in g.members]
            book.groups[g.group.alert_id] = Group(g.group, ids, g.pending_post)
            for m in g.members:
                book.alerts[m.alert.alert_id] = book.alerts.get(m.alert.alert_id, m.alert)
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
        if alert_id in self.groups:
            self.groups[alert_id].row = row
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

    def event(self, kind: str, d: StoredDecision, text: str, key: str) -> None:
        self.events.append(
            Event(
                time=dt.datetime.combine(d.nightly, dt.time(12), dt.UTC),
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

    def moved(
        self, kind: str, alert_id: int, d: StoredDecision, key: str, detail: str = ""
    ) -> None:
        group = self.alerts[alert_id].group_id
        self.transitions.append(AlertTransition(kind, key, alert_id, d.nightly, detail, group))

    # -------------------------------------------------------------- decisions
    def pair_nights(self, d: StoredDecision) -> list[KeyNight]:
        pair = (d.candidate_branch, d.baseline_branch, d.variant)
        return [k for k in self.nights if k.pair == pair]

    def verdicts_since(self, d: StoredDecision, after: dt.date, until: dt.date) -> list[KeyNight]:
        return [k for k in self.pair_nights(d) if after < k.nightly <= until]

    def opener(self, alert: StoredAlert) -> KeyNight | None:
        """The decision an alert opened on, as it stands now (None: it is gone)."""
        ref = self.opened_on.get(alert.alert_id)
        if ref is not None:
            return next((k for k in self.nights if (k.nightly, *k.pair) == ref), None)
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
