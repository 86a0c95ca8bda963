"""Import the results JSON that today's vLLM-Omni seed-TTS nightly writes (REFERENCE.md §1).

One file = one run (status ``complete`` when it has per-item rows, ``summary_only`` otherwise)
with every clip and one grading whose grader is "from artifact". Validation happens before any
write: a malformed file raises :class:`ArtifactError` naming the file and the problem.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omni_tasks.grading import flags
from omni_tasks.grading.wer import NORMALIZER_VERSION, score
from omni_tasks.records import ClipAudio, ClipGrade, Grader, RunSpec, SynthStatus

ARTIFACT_GRADER = Grader(
    grader_id="artifact:vllm-omni-seed-tts",
    description={
        "backend": "artifact",
        "source": "vLLM-Omni seed-TTS harness (Whisper large-v3, transformers, fp32, 30 s window)",
        "normalizer": NORMALIZER_VERSION,
        "note": "WER as reported by the artifact; word counts recomputed by omni-tasks",
    },
)

# Artifact failure codes -> (synthesis status, grading status or None when nothing was graded).
ERROR_CODES: dict[str, tuple[SynthStatus, str | None]] = {
    "request_failed": ("request_failed", None),
    "no_pcm": ("no_audio", None),
    "empty_audio": ("no_audio", None),
    "empty_asr": ("ok", "empty_transcript"),
    "asr_exception": ("ok", "grader_error"),
    "wer_compute_failed": ("ok", "grader_error"),
}
SUMMARY_KEYS = (
    "seed_tts_content_evaluated",
    "seed_tts_request_failed",
    "seed_tts_no_pcm",
    "seed_tts_asr_failed",
)


class ArtifactError(ValueError):
    """The artifact cannot be imported; the message names the file and the problem."""


@dataclass(frozen=True)
class ParsedArtifact:
    spec: RunSpec
    clips: list[ClipAudio]
    grades: list[ClipGrade]
    warnings: list[str] = field(default_factory=list)

    @property
    def has_clips(self) -> bool:
        return bool(self.clips)


def parse_artifact_date(value: str) -> dt.date:
    """The harness writes ``YYYYmmdd-HHMMSS``; ISO dates and datetimes are accepted too."""
    for pattern in (r"^(\d{8})-\d{6}$", r"^(\d{8})$"):
        m = re.match(pattern, value)
        if m:
            return dt.datetime.strptime(m.group(1), "%Y%m%d").date()
    try:
        return dt.datetime.fromisoformat(value).date()
    except ValueError:
        raise ValueError(f"unrecognised date {value!r}") from None


def _require(cond: bool, path: Path, message: str) -> None:
    if not cond:
        raise ArtifactError(f"{path}: {message}")


def _finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def parse_artifact(
    path: Path,
    *,
    branch: str,
    benchmark: str = "seed_tts_en",
    commit: str | None = None,
    nightly: dt.date | None = None,
    system_prompt: str = flags.DEFAULT_SYSTEM_PROMPT,
) -> ParsedArtifact:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc})") from exc
    _require(isinstance(doc, dict), path, "top level must be a JSON object")
    _require(
        any(k.startswith("seed_tts_") for k in doc),
        path,
        "no seed_tts_* keys: not a vLLM-Omni seed-TTS results file",
    )
    warnings: list[str] = []

    if nightly is None:
        _require("date" in doc, path, "missing key 'date' (or pass --nightly)")
        _require(isinstance(doc["date"], str), path, "'date' must be a string")
        try:
            nightly = parse_artifact_date(doc["date"])
        except ValueError as exc:
            raise ArtifactError(f"{path}: 'date': {exc}") from None

    items = doc.get("seed_tts_wer_eval_items")
    _require(
        items is None or isinstance(items, list), path, "'seed_tts_wer_eval_items' must be a list"
    )
    clips: list[ClipAudio] = []
    grades: list[ClipGrade] = []
    thinker = _thinker_texts(doc, path, len(items or []), warnings)
    seen: set[str] = set()
    for i, item in enumerate(items or []):
        where = f"seed_tts_wer_eval_items[{i}]"
        _require(isinstance(item, dict), path, f"{where} must be an object")
        utt = item.get("utterance_id")
        _require(
            isinstance(utt, str) and bool(utt),
            path,
            f"{where}: 'utterance_id' must be a non-empty string",
        )
        _require(utt not in seen, path, f"{where}: duplicate utterance_id {utt!r}")
        seen.add(utt)
        ref = item.get("reference_raw", "")
        _require(isinstance(ref, str), path, f"{where} ({utt}): 'reference_raw' must be a string")
        text = thinker[i] if thinker else None
        clip, grade = _clip_from_item(item, i, utt, ref, text, system_prompt, path, where)
        clips.append(clip)
        if grade is not None:
            grades.append(grade)

    summary = {
        k: v
        for k, v in doc.items()
        if k.startswith("seed_tts_")
        and k != "seed_tts_wer_eval_items"
        and (_finite_number(v) or isinstance(v, str))
    }
    for k in ("model_id", "date", "max_concurrency"):
        if k in doc and (isinstance(doc[k], str) or _finite_number(doc[k])):
            summary[k] = doc[k]
    if clips:
        n_expected, status = len(clips), "complete"
    else:
        warnings.append(
            f"{path}: no per-item rows (seed_tts_wer_eval_items); imported as summary_only — "
            "the gate needs per-clip rows (rerun the harness with SEED_TTS_WER_SAVE_ITEMS=1)"
        )
        counts = [doc.get(k) for k in SUMMARY_KEYS]
        n_expected = int(sum(c for c in counts if _finite_number(c)))
        status = "summary_only"
    execution = {}
    if _finite_number(doc.get("max_concurrency")):
        execution["client_concurrency"] = doc["max_concurrency"]
    spec = RunSpec(
        benchmark=benchmark,
        nightly=nightly,
        branch=branch,
        trigger="import",
        status=status,  # type: ignore[arg-type]
        n_expected=n_expected,
        commit_sha=commit,
        config={"model": doc["model_id"]} if isinstance(doc.get("model_id"), str) else {},
        execution=execution,
        prompt_fingerprint=hashlib.sha256(system_prompt.encode()).hexdigest(),
        system_prompt=system_prompt,
        summary=summary,
        source={
            "format": "vllm-omni-seed-tts",
            "file": path.name,
            "sha256": hashlib.sha256(raw).hexdigest(),
        },
    )
    return ParsedArtifact(spec, clips, grades, warnings)


def _thinker_texts(
    doc: dict[str, Any], path: Path, n_items: int, warnings: list[str]
) -> list[str | None] | None:
    texts = doc.get("generated_texts")
    if texts is None or n_items == 0:
        return None
    if not isinstance(texts, list) or len(texts) != n_items:
        n = len(texts) if isinstance(texts, list) else type(texts).__name__
        warnings.append(
            f"{path}: generated_texts has {n} entries for {n_items} items; thinker text ignored "
            "(it can only be aligned by position when the lengths match)"
        )
        return None
    return [t if isinstance(t, str) else None for t in texts]


def _clip_from_item(
    item: dict[str, Any],
    ordinal: int,
    utt: str,
    ref: str,
    thinker_text: str | None,
    system_prompt: str,
    path: Path,
    where: str,
) -> tuple[ClipAudio, ClipGrade | None]:
    audio_uri = item.get("audio_path") if isinstance(item.get("audio_path"), str) else None
    question = flags.is_question(ref)
    thinker_wer = _safe_wer(ref, thinker_text) if thinker_text else None
    if "error" in item:
        code = item["error"]
        _require(
            code in ERROR_CODES,
            path,
            f"{where} ({utt}): unknown error code {code!r} "
            f"(expected one of {', '.join(ERROR_CODES)})",
        )
        synth, grade_status = ERROR_CODES[code]
        detail = item.get("detail") if isinstance(item.get("detail"), str) else None
        clip = ClipAudio(
            utt,
            ordinal,
            ref,
            synth,
            audio_uri=audio_uri,
            thinker_text=thinker_text,
            error_detail=f"{code}: {detail or ''}".strip(),
        )
        if grade_status is None:
            return clip, None
        if grade_status == "empty_transcript":
            counts = _safe_score(ref, "")
            return clip, ClipGrade(
                utt,
                "empty_transcript",
                hypothesis="",
                wer=1.0,
                thinker_wer=thinker_wer,
                is_question=question,
                **(counts or {}),
            )
        return clip, ClipGrade(
            utt, "grader_error", thinker_wer=thinker_wer, is_question=question, error_detail=code
        )
    wer = item.get("wer")
    _require(
        _finite_number(wer) and wer >= 0,  # type: ignore[operator]
        path,
        f"{where} ({utt}): 'wer' must be a finite non-negative number, got {wer!r}",
    )
    hyp = item.get("asr_raw", "")
    _require(isinstance(hyp, str), path, f"{where} ({utt}): 'asr_raw' must be a string")
    counts = _safe_score(ref, hyp)
    clip = ClipAudio(utt, ordinal, ref, "ok", audio_uri=audio_uri, thinker_text=thinker_text)
    return clip, ClipGrade(
        utt,
        "graded",
        hypothesis=hyp,
        wer=float(wer),  # type: ignore[arg-type]
        thinker_wer=thinker_wer,
        task_leak=flags.task_leak(ref, hyp, system_prompt),
        is_question=question,
        **(counts or {}),
    )


def _safe_score(ref: str, hyp: str) -> dict[str, Any] | None:
    """Word counts from our scorer; None when the reference has no words."""
    try:
        return dict(score(ref, hyp).grade_fields())
    except ValueError:
        return None


def _safe_wer(ref: str, hyp: str) -> float | None:
    try:
        return score(ref, hyp).wer
    except ValueError:
        return None
