"""A series' night as data: what `store.night.load` reads (NightInputs), what the pure
`night.decide` makes of it (NightOutcome) and what `store.night.write` stores in one
transaction. Nothing here reads or writes; a test builds NightInputs by hand."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from omni_tasks.contracts import (
    AlertDetails,
    Comparison,
    Contract,
    Decision,
    DecisionHistory,
    JsonObject,
    RunStats,
    StoredAlert,
    StoredDecision,
)
from omni_tasks.contracts.rerun import RerunResult
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
        return {**asdict(self.run), "grader_id": self.grader_id}


NightKey = tuple[dt.date, str, str, str]  # nightly, candidate branch, baseline branch, variant


def night_key(d: Decision | StoredDecision) -> NightKey:
    """A decision's night and key: what one stored decision row is unique by."""
    return (d.nightly, d.candidate_branch, d.baseline_branch, d.variant)


@dataclass(frozen=True)
class KeyNight(StoredDecision):
    """One stored decision of the series within the loaded window (tonight's as decided now),
    with what confirmation and the commit range read of it besides the decision."""

    # The decision's comparison (loaded for tonight and the nights after it only) and runs:
    # none for a decision read only as an open alert's opener.
    comparison: Comparison | None = None
    tau: float | None = None
    candidate_run_id: int | None = None
    candidate_run_key: str | None = None
    baseline_run_id: int | None = None
    airflow_dag_id: str | None = None
    airflow_run_id: str | None = None
    regressed: int = 0
    improved: int = 0
    n_paired: int = 0
    m: int = 1
    paired: bool = False  # a comparison is stored (a run-group night has none)
    table: tuple[int, int, int, int] | None = None  # n11, n12, n21, n22
    commit_sha: str | None = None  # the candidate run's
    vllm: str | None = None  # its vLLM build, else version
    history: DecisionHistory | None = None  # its history evidence: the z the CUSUM reads

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
class NightQuestion:
    """Which series' night to decide, against which baseline branch; `expect`: the branches the
    night should have run; `sim_margin`: the config's similarity margin, if it sets one."""

    series: Series
    nightly: dt.date
    baseline_branch: str
    expect: tuple[str, ...] = ()
    sim_margin: float | None = None


@dataclass(frozen=True)
class ItemHistory:
    """The baseline's items over the nights of its window: each night's broken items (oldest
    first; a night with none broken is still listed) and on how many of those nights each item
    was observed. Stored this way, a window costs its broken items, not every item a night."""

    broken: tuple[tuple[dt.date, frozenset[str]], ...] = ()
    observed: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class NightInputs(NightQuestion):
    """Everything one series' night is decided from: the question, and what `store.night.load`
    read for it."""

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
    # The baseline's items over the last `history_nights` nights before tonight: the history
    # the candidate is tested against (night/history.py).
    baseline_items: ItemHistory = field(default_factory=ItemHistory)
    # The baseline's broken total on each of the last `phi_nights` nights before tonight
    # (oldest first), from its stored statistics: what run-level noise φ is estimated from.
    baseline_totals: tuple[tuple[dt.date, int], ...] = ()
    triage_delay_s: int = 0  # how long a group member's opening post waits for the others
    # Same-morning re-runs stored for the window's nights (jobs/rerun.py), by night and pair.
    reruns: dict[NightKey, RerunResult] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredComparison:
    """A comparison to store: its columns and result."""

    columns: JsonObject
    result: JsonObject


@dataclass(frozen=True)
class NightDecisionRow:
    """A decision to store: the contract and the columns only the store keeps."""

    decision: Decision
    comparison: StoredComparison | None  # the paired comparison it rests on
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
    opener: NightKey | None = None  # the decision the alert opened on


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
            "comparisons": [
                {"pair": i, **_to_json(d.comparison)}
                for i, d in enumerate(self.decisions)
                if d.comparison is not None
            ],
            "confirmations": [_to_json(c) for c in self.confirmations],
            "transitions": [t.to_json() for t in self.transitions],
            "messages": [m.to_json() for m in self.messages],
            "rewrites": [r.to_json() for r in self.rewrites],
            "events": [_to_json(e) for e in self.events],
        }
        return doc
