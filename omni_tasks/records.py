"""Plain data passed between layers: what a run, a clip and a clip's grade are."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from omni_tasks.names import check_name

SynthStatus = Literal[
    "ok", "over_long", "no_audio", "timeout_partial", "timeout_no_output", "request_failed"
]
GradeStatus = Literal["graded", "empty_transcript", "grader_error"]
# Synthesis outcomes that are the serving stack's failure, not the model's (no clip to judge).
INFRA_STATUSES = frozenset({"request_failed", "timeout_no_output"})
RunStatus = Literal["running", "complete", "partial", "failed", "summary_only"]
Trigger = Literal["nightly", "backfill", "manual", "bisect", "import"]


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
    lineage: dict[str, Any] = field(default_factory=dict)
    variant: str = "default"
    config: dict[str, Any] = field(default_factory=dict)
    stack: dict[str, Any] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)
    execution_fingerprint: str | None = None
    dataset_fingerprint: str | None = None
    prompt_fingerprint: str | None = None
    system_prompt: str | None = None
    seed: int | None = None
    airflow_dag_id: str | None = None
    airflow_run_id: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Names become keys, path components and URL parts: refused here, before any write.
        check_name(self.benchmark, "benchmark")
        check_name(self.branch, "branch")
        check_name(self.variant, "variant")


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
    # Secondary metrics an artifact may carry: stored and shown, never gated.
    sim: float | None = None
    utmos: float | None = None


@dataclass(frozen=True)
class Grader:
    grader_id: str
    description: dict[str, Any] = field(default_factory=dict)


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
