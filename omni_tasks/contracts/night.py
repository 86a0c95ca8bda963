"""A series' night as data: what `store.night.load` reads (NightInputs), what the pure
`night.decide` makes of it (NightOutcome) and what `store.night.write` stores in one
transaction. Nothing here reads or writes; a test builds NightInputs by hand."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from omni_tasks.contracts import (
    AlertDetails,
    Comparison,
    Contract,
    Decision,
    JsonObject,
    RunStats,
    StoredAlert,
)
from omni_tasks.records import ClipRecord, NightlyRun, NightRun, StoredRun
from omni_tasks.series import Series


@dataclass(frozen=True)
class GradedRun:
    """A run with the grading the statistics read and that grading's clip records."""

    run: StoredRun
    grading_id: int
    grader_id: str
    clips: list[ClipRecord]

    @property
    def meta(self) -> dict[str, object]:
        import dataclasses

        return {**dataclasses.asdict(self.run), "grader_id": self.grader_id}


@dataclass(frozen=True)
class KeyNight:
    """One stored decision of the series within the loaded window, with what confirmation,
    the alert lifecycle and the commit range read of it."""

    decision_id: int
    nightly: dt.date
    candidate_branch: str
    baseline_branch: str
    variant: str
    verdict: str
    confirmed: bool
    mcnemar_p_holm: float | None
    reasons: list[str]
    regressed: int
    improved: int
    n_paired: int
    m: int
    paired: bool  # a comparison is stored (a run-group night has none)
    table: tuple[int, int, int, int] | None  # n11, n12, n21, n22
    commit_sha: str | None  # the candidate run's
    vllm: str | None  # its vLLM build, else version
    tau: float | None = None
    comparison: Comparison | None = None  # loaded for tonight and the nights after it only
    candidate_run_id: int | None = None
    candidate_run_key: str | None = None
    baseline_run_id: int | None = None
    airflow_dag_id: str | None = None
    airflow_run_id: str | None = None

    @property
    def pair(self) -> tuple[str, str, str]:
        return (self.candidate_branch, self.baseline_branch, self.variant)


@dataclass(frozen=True)
class GroupMemberRow:
    """A regression alert as a group lists it, with the series of the decision that opened
    it (None: that decision is gone)."""

    alert: StoredAlert
    series: Series | None
    candidate_branch: str | None
    baseline_branch: str | None


@dataclass(frozen=True)
class GroupState:
    """An alert group of a candidate/baseline pair, its members and whether its opening post
    is still pending (so it can be rewritten instead of updated)."""

    group: StoredAlert
    members: tuple[GroupMemberRow, ...]
    pending_post: bool


@dataclass(frozen=True)
class Settings:
    """The deployment's settings the messages read (links, buttons, the triage delay)."""

    triage_delay_s: int = 0


@dataclass(frozen=True)
class NightInputs:
    """Everything one series' night is decided from, read by `store.night.load`."""

    series: Series
    nightly: dt.date
    baseline_branch: str
    expect: tuple[str, ...]
    sim_margin: float | None
    policy_version: str
    runs: tuple[NightlyRun, ...]  # the night's runs, as the gate pairs them
    graded: dict[str, GradedRun]  # by run key: each graded run with its clip records
    stats: dict[int, RunStats]  # by grading id: statistics stored at the primary τ
    run_rows: dict[int, NightRun]  # by run id: the night's (and replayed nights') candidates
    history: tuple[KeyNight, ...]  # the series' decisions within the loaded window
    openers: dict[int, KeyNight]  # by decision id: open alerts' opening decisions
    open_alerts: dict[str, StoredAlert]  # by alert key
    invalid_alerts: dict[str, StoredAlert]  # by alert key: the last one a person closed
    groups: tuple[GroupState, ...]  # groups the night can join or close
    lone: tuple[GroupMemberRow, ...]  # regression alerts in no group, the pairs' ranges
    audio: dict[tuple[int, str], str]  # (run id, item) → audio URI of top regressed items
    next_alert_id: int  # the id the next alert gets (under the night's lock)
    # Per baseline item, broken-or-not over the last K nights (oldest first); read for the
    # evidence rules to come, unused by today's rule.
    baseline_items: dict[str, tuple[tuple[dt.date, bool], ...]] = field(default_factory=dict)
    settings: Settings = Settings()


@dataclass(frozen=True)
class StoredComparison:
    """A comparison to store (its columns and result); `pair` indexes the decision it backs."""

    pair: int
    columns: JsonObject
    result: JsonObject


@dataclass(frozen=True)
class NightDecisionRow:
    """A decision to store: the contract and the columns only the store keeps."""

    decision: Decision
    comparison: int | None  # index into NightOutcome.comparisons
    candidate_run_id: int | None
    baseline_run_id: int | None
    reasons: list[str]
    policy: JsonObject


@dataclass(frozen=True)
class Confirmation:
    """A stored decision whose confirmation tonight changes."""

    decision_id: int
    nightly: dt.date
    confirmed: bool


@dataclass(frozen=True)
class AlertOp:
    """One write to `omni.alert`, in order: insert (regression | infra | group), touch,
    resolve, member_range (a regression's nights and group line), join (a member into a
    group). `alert_id` of an insert is the id the store must give it."""

    op: str
    alert_id: int
    alert_key: str | None = None
    kind: str | None = None
    nightly: dt.date | None = None
    details: AlertDetails | None = None
    commits: list[str] | None = None
    range_from: dt.date | None = None
    range_to: dt.date | None = None
    delay_s: int = 0
    group_id: int | None = None
    opener: tuple[dt.date, str, str, str] | None = None  # the decision the alert opened on


@dataclass(frozen=True)
class AlertTransition(Contract):
    """What happened to one alert: open | still | held | resolve | withdraw | infra (an
    infra alert opened, repeated or cleared: `detail`)."""

    kind: str
    alert_key: str
    alert_id: int
    nightly: dt.date
    detail: str = ""
    group_id: int | None = None


@dataclass(frozen=True)
class Message(Contract):
    """An outbox row: sent once per idempotency key."""

    idempotency_key: str
    alert_id: int | None
    kind: str  # post | update | reply | upload
    payload: JsonObject


@dataclass(frozen=True)
class PostRewrite(Contract):
    """A group's pending opening post, rewritten before it goes out."""

    alert_id: int
    payload: JsonObject


@dataclass(frozen=True)
class Event(Contract):
    """An annotation (omni.event), once per dedup key."""

    time: dt.datetime
    kind: str
    benchmark: str | None
    branch: str | None
    variant: str | None
    text: str
    tags: list[str]
    details: JsonObject
    dedup_key: str


@dataclass(frozen=True)
class NightOutcome:
    """What deciding a series' night comes to, written in one transaction."""

    nightly: dt.date
    series: Series
    stats: list[tuple[int, float, str, RunStats]]  # grading, τ, policy version: computed now
    comparisons: list[StoredComparison]
    decisions: list[NightDecisionRow]
    confirmations: list[Confirmation]
    transitions: list[AlertTransition]
    alert_ops: list[AlertOp]
    messages: list[Message]
    rewrites: list[PostRewrite]
    events: list[Event]

    def to_json(self) -> JsonObject:
        """The outcome's one JSON spelling (what `gate --outcome` prints)."""
        from omni_tasks.contracts import _to_json

        doc: JsonObject = {
            "nightly": self.nightly.isoformat(),
            "series": self.series.key,
            "decisions": [d.decision.to_json() for d in self.decisions],
            "comparisons": [_to_json(c) for c in self.comparisons],
            "confirmations": [_to_json(c) for c in self.confirmations],
            "transitions": [t.to_json() for t in self.transitions],
            "messages": [m.to_json() for m in self.messages],
            "rewrites": [r.to_json() for r in self.rewrites],
            "events": [_to_json(e) for e in self.events],
        }
        return doc
