"""Plain data passed between layers: what a run (as specified, and as stored), a clip and a
clip's grade are, and what a JSON document is."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from pydantic import JsonValue

from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.trust.names import check_name

# A JSON document as it is sent or received (a Slack payload, a Grafana dashboard, an untrusted
# API's answer): pydantic's recursive JSON type, so a reader narrows a value before it indexes
# it, where `Any` would let a wrong shape through unchecked.
JsonObject = dict[str, JsonValue]

SynthStatus = Literal[
    "ok", "over_long", "no_audio", "timeout_partial", "timeout_no_output", "request_failed"
]
GradeStatus = Literal["graded", "empty_transcript", "grader_error"]
# Synthesis outcomes that are the serving stack's failure, not the model's (no clip to judge).
INFRA_STATUSES = frozenset({"request_failed", "timeout_no_output"})
RunStatus = Literal["running", "complete", "partial", "failed", "summary_only"]
Trigger = Literal[
    "nightly",
    "backfill",
    "manual",
    "bisect",
    "import",
    "ab",
    "ablate",
    "retry",
    "concurrency",
    "rerun",
]


# `run`'s JSON columns are written as these dicts are (`dataclasses.asdict`, Jsonb) and read back
# as plain dicts, so their stored spelling and every content hash stay as they were: a TypedDict
# types the keys without changing the value. total=False: a key is absent where its producer
# does not know it (an import, a run against a URL), and absent is stored as absent.


class LineageFlags(TypedDict, total=False):
    """Where a run's commit stood against its branch that night; None where unknown
    (synthesis/provenance.py's `Lineage` and the nightly's recorded head)."""

    differs_from_recorded_head: bool | None  # not the branch head recorded that night
    reachable_from_baseline_head: bool | None  # really a baseline commit
    reconstructed_head: bool  # the nightly rebuilt the head from history


class Execution(TypedDict, total=False):
    """How the run's requests were made (what `execution_fingerprint` hashes)."""

    gpu_class: str | None
    client_concurrency: int
    server_max_num_seqs: int | None
    request_template: str
    audio_cap_s: float
    client_retry: str
    seed_sent: bool
    stage_settings: str | None  # the stage settings' fingerprint, the seed left out


@dataclass(frozen=True)
class RunSpec:
    """Everything that identifies and describes one synthesis run (the `run` row)."""

    benchmark: str
    nightly: dt.date
    branch: str
    trigger: Trigger
    status: RunStatus
    n_expected: int
    commit_sha: str | None = None
    commit_time: dt.datetime | None = None
    observed_head: str | None = None
    lineage: LineageFlags = field(default_factory=LineageFlags)
    variant: str = "default"
    config: JsonObject = field(default_factory=dict)
    # What served it: versions the serving interpreter reports, the GPU, the launched server's
    # log and deploy, an image and pod, or the simulator: open-ended, kept as reported.
    stack: JsonObject = field(default_factory=dict)
    execution: Execution = field(default_factory=Execution)
    execution_fingerprint: str | None = None
    dataset_fingerprint: str | None = None
    prompt_fingerprint: str | None = None
    system_prompt: str | None = None
    seed: int | None = None
    airflow_dag_id: str | None = None
    airflow_run_id: str | None = None
    summary: JsonObject = field(default_factory=dict)  # an imported artifact's own figures
    source: JsonObject = field(default_factory=dict)  # where an imported artifact came from
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE

    @property
    def series(self) -> Series:
        return Series(self.benchmark, self.model, self.lane)

    def __post_init__(self) -> None:
        # Names become keys, path components and URL parts: refused here, before any write.
        Series(self.benchmark, self.model, self.lane)  # checks the three names
        check_name(self.branch, "branch")
        check_name(self.variant, "variant")


@dataclass(frozen=True, kw_only=True)
class StoredRun(RunSpec):
    """A run as stored: its spec, and the identity and hashes the store gave it."""

    run_id: int
    run_key: str
    config_hash: str
    content_hash: str
    created_at: dt.datetime
    finished_at: dt.datetime | None = None

    @property
    def spec(self) -> RunSpec:
        """The spec alone (what its content hash covers)."""
        return RunSpec(**{f.name: getattr(self, f.name) for f in dataclasses.fields(RunSpec)})


@dataclass(frozen=True, kw_only=True)
class NightRun(StoredRun):
    """A night's run with its newest grading's grader (what reproduces it; None: ungraded)."""

    grader: JsonObject | None = None


@dataclass(frozen=True)
class NightlyRun:
    """A run of the night as the gate pairs it, with its latest complete grading (if any)."""

    run_id: int
    run_key: str
    benchmark: str
    model: str
    lane: str
    branch: str
    variant: str
    seed: int | None
    status: str
    n_expected: int
    dataset_fingerprint: str | None
    prompt_fingerprint: str | None
    execution_fingerprint: str | None
    lineage: JsonObject
    grading_id: int | None
    grader_id: str | None


@dataclass(frozen=True)
class ClipAudio:
    """Synthesis outcome of one utterance. A failed request is a row with a status."""

    utt_id: str
    ordinal: int
    reference_text: str
    synth_status: SynthStatus
    audio_uri: str | None = None
    audio_seconds: float | None = None
    latency_s: float | None = None
    thinker_text: str | None = None
    error_detail: str | None = None
    finish_reason: str | None = None  # the server's (`stop`, `length`), where recorded


@dataclass(frozen=True)
class ClipGrade:
    """One grader's verdict on one utterance's audio."""

    utt_id: str
    grade_status: GradeStatus
    hypothesis: str | None = None
    hypothesis_norm: str | None = None
    ref_words: int | None = None
    hyp_words: int | None = None
    substitutions: int | None = None
    deletions: int | None = None
    insertions: int | None = None
    hits: int | None = None
    wer: float | None = None
    thinker_wer: float | None = None
    task_leak: bool = False
    is_question: bool = False
    error_detail: str | None = None
    # Item outcome for benchmarks not scored by WER (multiple choice: the answer is wrong).
    incorrect: bool | None = None
    # Dimension -> label (multiple choice: task, category, duration), for per-label shifts.
    breakdown: dict[str, str] | None = None
    # Secondary metrics an artifact may carry: stored and shown; SIM is gated only for a series
    # that says so (`sim_margin`, analysis/similarity.py).
    sim: float | None = None
    utmos: float | None = None


@dataclass(frozen=True)
class Grader:
    grader_id: str
    description: JsonObject = field(default_factory=dict)  # its GraderSpec, as JSON


@dataclass(frozen=True)
class ClipRecord:
    """A clip as the statistics see it: synthesis outcome joined with one grading."""

    utt_id: str
    reference_text: str
    synth_status: str
    grade_status: str | None
    wer: float | None
    ref_words: int | None = None
    hyp_words: int | None = None
    hypothesis: str | None = None
    thinker_wer: float | None = None
    task_leak: bool = False
    is_question: bool = False
    audio_seconds: float | None = None
    audio_uri: str | None = None
    synth_detail: str | None = None  # the synthesis error detail (an artifact's failure code)
    incorrect: bool | None = None
    breakdown: dict[str, str] | None = None
    sim: float | None = None
    utmos: float | None = None


# A clip record's fields read from its grade, under the grade's own names.
_GRADED = tuple(
    f.name
    for f in dataclasses.fields(ClipRecord)
    if f.name != "utt_id" and f.name in {g.name for g in dataclasses.fields(ClipGrade)}
)


def records_of(clips: Sequence[ClipAudio], grades: Sequence[ClipGrade]) -> list[ClipRecord]:
    """Clips joined with their grades as the statistics see them: what `clip_records.sql`
    reads back once they are stored (an import checks its artifact's own summary with it)."""
    by_id = {g.utt_id: g for g in grades}
    out = []
    for c in clips:
        g = by_id.get(c.utt_id)
        graded = {k: getattr(g, k) for k in _GRADED} if g else {"grade_status": None, "wer": None}
        out.append(
            ClipRecord(
                utt_id=c.utt_id,
                reference_text=c.reference_text,
                synth_status=c.synth_status,
                audio_seconds=c.audio_seconds,
                audio_uri=c.audio_uri,
                synth_detail=c.error_detail,
                **graded,  # an ungraded clip: no grade status or WER, the rest at defaults
            )
        )
    return out


def commonest_failure(clips: Sequence[ClipRecord]) -> tuple[str, int] | None:
    """The commonest reason among a run's infra clips (their detail, else their status), and
    how many clips had it; None when no clip is infra."""
    reasons = Counter(
        c.synth_detail or c.synth_status for c in clips if c.synth_status in INFRA_STATUSES
    )
    return reasons.most_common(1)[0] if reasons else None
