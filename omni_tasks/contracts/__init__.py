"""What statistics hand to the gate, alerts, dashboards, the report and the CLI: one run's
statistics, a paired comparison, a night's decision. Frozen and typed; each has one JSON
spelling (`to_json` / `from_json`), which is what the database keeps (`run_stats.stats`,
`comparison.result`) and what `--json` prints."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from omni_tasks.records import JsonObject
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series

T = TypeVar("T")


def json_objects(value: object) -> list[JsonObject]:
    """The JSON objects a list holds, in order (none when `value` is not a list): how a reader
    narrows a list it did not write."""
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _from_json(tp: Any, value: Any) -> Any:
    """`value` (parsed JSON) as type `tp`: dataclasses, optionals, tuples, lists and dicts of
    them, dates from ISO strings; anything else as it is."""
    if value is None:
        return None
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in get_args(tp) if a is not type(None)]
        return _from_json(inner[0], value) if len(inner) == 1 else value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_json(tp, value)
    if origin is tuple:
        return tuple(value)
    if origin is list:
        (item,) = get_args(tp)
        return [_from_json(item, v) for v in value]
    if origin is dict:
        _, item = get_args(tp)
        return {k: _from_json(item, v) for k, v in value.items()}
    if tp is dt.date and isinstance(value, str):
        return dt.date.fromisoformat(value)
    return value


@functools.cache
def _fields(cls: type) -> dict[str, object]:
    """A dataclass's field types, resolved once: `get_type_hints` evaluates every string
    annotation on each call, which was a quarter of a night's `decide`."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def from_json(cls: type[T], data: JsonObject) -> T:
    """An instance of dataclass `cls` from its JSON object (unknown keys are ignored, so a row
    written by a later version still reads)."""
    fields = _fields(typing.cast(type, cls))
    return cls(**{k: _from_json(fields[k], v) for k, v in data.items() if k in fields})


class Contract:
    """A typed result with one JSON spelling."""

    def to_json(self) -> JsonObject:
        out: JsonObject = _to_json(self)
        return out

    @classmethod
    def from_json(cls: type[T], data: JsonObject) -> T:
        return from_json(cls, data)


@dataclass(frozen=True)
class BranchPlan(Contract):
    """One series × branch × seed of a night: what its GPU task runs (passed as XCom JSON)."""

    series: str  # Series.key
    variant: str
    lane: str
    label: str
    branch: str
    commit: str
    seed: int
    nightly: str  # ISO date
    reconstructed: bool = False  # a backfill's head, found after the fact


@dataclass(frozen=True)
class ModeShare(Contract):
    clips: int
    error_share: float


@dataclass(frozen=True)
class LabelCell(Contract):
    """Items with one breakdown label (a task, a category): how many, how many right."""

    correct: int
    total: int
    accuracy: float


@dataclass(frozen=True)
class RunStats(Contract):
    """One grading's statistics at a tail threshold (analysis/run_stats.py computes them).
    WER figures are None for a benchmark not scored by WER; `accuracy` is None for one that is."""

    tau: float
    n_expected: int
    n_scored: int
    n_failed: int
    n_infra: int
    coverage: float
    n_broken: int
    tail_fraction: float | None
    tail_fraction_ci: tuple[float, float] | None
    mean_wer: float | None = None
    median_wer: float | None = None
    capped_mean_wer: float | None = None
    corpus_wer: float | None = None
    runaway_fraction: float | None = None
    n_runaway: int = 0
    top10_error_share: float = 0.0
    runaway_error_share: float = 0.0
    failure_modes: dict[str, ModeShare] = field(default_factory=dict)
    origins: dict[str, int] = field(default_factory=dict)
    task_leak_clips: int = 0
    answered_clips: int = 0
    official: dict[str, Any] = field(default_factory=dict)  # upstream's figures, its names
    audio_seconds: float = 0.0
    clips_over_20s: int = 0
    accuracy: float | None = None
    breakdown: dict[str, dict[str, LabelCell]] = field(default_factory=dict)
    sim_mean: float | None = None
    utmos_mean: float | None = None
    questions: RunStats | None = None
    statements: RunStats | None = None
    # Which run and grading these are of (set when read from the store).
    run_key: str | None = None
    branch: str | None = None
    grader_id: str | None = None
    benchmark: str | None = None

    def of(self, run_key: str, branch: str, benchmark: str, grader_id: str) -> RunStats:
        """These statistics labelled with the run and grading they are of."""
        return dataclasses.replace(
            self, run_key=run_key, branch=branch, grader_id=grader_id, benchmark=benchmark
        )


@dataclass(frozen=True)
class SummaryOnlyStats(Contract):
    """A summary-only import (no per-item rows): its official figures, as reported."""

    run_key: str
    branch: str
    n_expected: int
    official: dict[str, Any]
    note: str
    summary_only: bool = True
    benchmark: str | None = None


@dataclass(frozen=True)
class RegressedItem(Contract):
    """An item fine in the baseline and broken in the candidate, for alerts and the report."""

    utt_id: str
    reference: str
    heard: str | None
    wer: float
    baseline_heard: str | None
    baseline_wer: float
    audio_uri: str | None = None


@dataclass(frozen=True)
class PairedFigures(Contract):
    """The paired table of two runs: items broken on both sides, regressed (fine in the
    baseline, broken in the candidate), improved, fine on both; exact McNemar both ways; the
    difference in broken share with Newcombe's interval; the capped-mean difference (WER only)."""

    n_paired: int
    stable_broken: int  # n11
    regressed: int  # b = n12
    improved: int  # c = n21
    stable_ok: int  # n22
    mcnemar_p: float
    mcnemar_p_improve: float
    delta_tail_fraction: float
    delta_tail_fraction_ci: tuple[float, float]
    delta_capped_mean_wer: float | None
    delta_capped_mean_wer_ci: tuple[float, float] | None


@dataclass(frozen=True)
class Comparison(PairedFigures):
    """A paired A/B of two gradings at one tau, with its single-comparison verdict."""

    tau: float
    delta_mean_wer: float | None
    verdict: str
    reasons: list[str]
    warnings: list[str]
    comparable: bool
    mde: float | None
    same_margin: float | None
    mode_shift: dict[str, dict[str, int]]
    top_regressed: list[RegressedItem]
    regressed_clips: list[str]
    improved_clips: list[str]
    policy_version: str
    baseline: RunStats
    candidate: RunStats
    comparison_id: int | None = None


@dataclass(frozen=True)
class DecisionHistory(Contract):
    """A decision's history-aware evidence (night/history.py): tonight's candidate against the
    baseline's per-item history, z widened by √φ, and the run-level noise φ (floor 1) with
    the nights of baseline totals it rests on. `refused`: why the window was not used (the
    baseline drifted inside it; too few nights), and then z confirms nothing."""

    z: float
    delta: float  # Δ̂, a share of items
    n: int  # items compared
    nights: int  # baseline nights in the window, tonight's included
    refused: str | None
    phi: float
    phi_nights: int
    sd: float = 0.0  # Δ̂'s standard error, widened by √φ (0: a decision from before it was kept)


@dataclass(frozen=True)
class Decision(Contract):
    """A night's gate decision for one candidate branch x variant against the baseline."""

    benchmark: str
    nightly: dt.date
    candidate_branch: str
    baseline_branch: str
    variant: str
    verdict: str
    confirmed: bool
    mcnemar_p: float | None
    mcnemar_p_holm: float | None
    delta_tail_fraction: float
    delta_tail_fraction_ci: tuple[float, float]
    regressed: int
    improved: int
    n_paired: int
    reasons: list[str]
    mde: float | None
    same_margin: float | None
    reported: dict[str, str] = field(default_factory=dict)
    group_test: dict[str, Any] | None = None
    history: DecisionHistory | None = None
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE


@dataclass(frozen=True)
class DecisionKey:
    """What one decision series is kept for: a series' candidate against its baseline, in one
    variant, under one policy version (gate_decision's key, less the night)."""

    series: Series
    candidate_branch: str
    baseline_branch: str
    variant: str
    policy_version: str

    def args(self) -> dict[str, str]:
        """The key as the store's queries name it."""
        return {
            **self.series.args(),
            "candidate_branch": self.candidate_branch,
            "baseline_branch": self.baseline_branch,
            "variant": self.variant,
            "policy_version": self.policy_version,
        }


@dataclass(frozen=True, kw_only=True)
class DecisionRow:
    """A night's decision under gate_decision's column names: its key, its verdict and the
    statistics' tau and candidate run it read (what every stored reading of it shares)."""

    decision_id: int
    benchmark: str
    model: str
    lane: str
    candidate_branch: str
    baseline_branch: str
    variant: str
    policy_version: str
    nightly: dt.date
    verdict: str
    confirmed: bool
    mcnemar_p_holm: float | None
    tau: float | None
    candidate_run_key: str | None

    @property
    def series(self) -> Series:
        return Series(self.benchmark, self.model, self.lane)

    @property
    def key(self) -> DecisionKey:
        return DecisionKey(
            self.series,
            self.candidate_branch,
            self.baseline_branch,
            self.variant,
            self.policy_version,
        )


@dataclass(frozen=True, kw_only=True)
class StoredDecision(DecisionRow):
    """A night's decision as the store keeps it, with its comparison and candidate run
    (store/decisions.py): what the alert lifecycle reads."""

    reasons: list[str]
    comparison: Comparison | None
    candidate_run_id: int | None
    baseline_run_id: int | None
    airflow_dag_id: str | None
    airflow_run_id: str | None

    def branch(self, side: str) -> str:
        """The candidate's or the baseline's branch."""
        return self.candidate_branch if side == "candidate" else self.baseline_branch


@dataclass(frozen=True)
class TriageEntry(Contract):
    """One person's action on an alert."""

    status: str  # acknowledged, invalid, duplicate, downstream, ignored, linked, reopened
    by: str
    at: str  # ISO time
    note: str | None = None
    link: str | None = None
    of: int | None = None  # duplicate / downstream: the alert that owns this regression


@dataclass(frozen=True)
class Triage(Contract):
    status: str
    history: list[TriageEntry]


@dataclass(frozen=True)
class BisectPlan(Contract):
    """The auto-bisect planned for a regression alert (jobs/auto_bisect.py), kept in its
    details: what was decided once, and the trigger a re-run of the night gets back."""

    night: str  # the night it was planned on
    status: str  # triggered | attribution | skipped
    why: str | None = None  # skipped: why not
    last_good: str | None = None  # the range's commits and nights
    first_bad: str | None = None
    last_good_night: str | None = None
    first_bad_night: str | None = None
    commits: int | None = None  # commits after the last good one
    budget: float | None = None  # full-run equivalents
    author: str | None = None  # a one-commit range: who made that commit
    vllm: tuple[str, str] | None = None  # attribution: the vLLM builds at the two ends
    trigger_dag_id: str | None = None
    trigger_run_id: str | None = None
    conf: JsonObject | None = None  # the triggered DAG run's conf (its form's fields)


@dataclass(frozen=True)
class AlertDetails(Contract):
    """What an alert keeps in `alert.details`: the decision that opened it, the candidate
    commits it covers, its triage history, and the auto-bisect planned for it; a group
    member's line and a group's commit range (alerts/groups.py)."""

    decision_id: int | None = None
    commits: list[str | None] = field(default_factory=list)  # None: a run without a commit
    triage: Triage | None = None
    bisect: BisectPlan | None = None
    summary: str | None = None  # a group member's line in its group's message
    last_good: str | None = None  # a group's commit range, oldest member's last good…
    first_bad: str | None = None  # …to the newest member's first bad commit

    @property
    def triage_status(self) -> str | None:
        return None if self.triage is None else self.triage.status


@dataclass(frozen=True)
class StoredAlert:
    """An alert as the store keeps it (omni.alert's columns), its details read."""

    alert_id: int
    alert_key: str
    kind: str  # regression, infra, group
    state: str  # open, resolved
    opened_nightly: dt.date
    last_nightly: dt.date
    resolved_nightly: dt.date | None
    channel: str | None
    parent_ts: str | None
    details: AlertDetails
    created_at: dt.datetime
    group_id: int | None
    range_from: dt.date | None  # a group member's nights (range_from, range_to]
    range_to: dt.date | None
    hold_until: dt.datetime | None
    thread_ts: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> StoredAlert:
        """An omni.alert row, its details read (other columns a query joins in are left out)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"details"}
        doc = {k: v for k, v in row.items() if k in names}
        return cls(**doc, details=AlertDetails.from_json(row["details"] or {}))
