"""Seed-TTS's import of upstream's results JSON (REFERENCE.md §1): one file is one run (status
`complete` with per-item rows, `summary_only` without), every clip, and one grading whose
grader is "from artifact"."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import fsspec

from omni_tasks.analysis.official import disagreements, official_summary
from omni_tasks.benchmarks.artifact import (
    MAX_UTT_ID,
    MAX_WER,
    ArtifactError,
    Document,
    ParsedArtifact,
    artifact_judge,
    bounded_number,
    check_item_text,
    finite_number,
    harness_setup,
    imported_spec,
    nightly_of,
    require,
    short_number,
    summary_figures,
    summary_mismatch,
)
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.grading import flags
from omni_tasks.grading.wer import NORMALIZER_VERSION, score
from omni_tasks.harness import BARE_ARTIFACT_GRADER, UnknownHarness, harness_window
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import ClipAudio, ClipGrade, Grader, SynthStatus, records_of
from omni_tasks.trust.names import path_component, under

ITEMS = "seed_tts_wer_eval_items"
ARTIFACT_GRADER = artifact_judge(
    BARE_ARTIFACT_GRADER,
    "vLLM-Omni seed-TTS harness (Whisper large-v3, transformers, fp32, 30 s window)",
    normalizer=NORMALIZER_VERSION,
    note="WER as reported by the artifact; word counts recomputed by omni-tasks",
)


def artifact_grader(harness_version: str | None) -> Grader:
    """The grader an artifact's WERs come from. Its id names the window policy when the harness
    version is known; an unknown version keeps the bare id, which pairs only with gradings of
    the same (unknown) policy, with a warning from the comparison."""
    if harness_version is None:
        return ARTIFACT_GRADER
    try:
        window = harness_window(harness_version)
    except UnknownHarness as exc:
        raise ArtifactError(str(exc)) from None
    return Grader(
        grader_id=f"{ARTIFACT_GRADER.grader_id}/{window}",
        description={
            **ARTIFACT_GRADER.description,
            "harness_version": harness_version,
            "window": window,
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


def parse_document(
    document: Document, options: ImportOptions, benchmark: str = "seed_tts_en"
) -> ParsedArtifact:
    """`options.audio_roots`: where the items' `audio_path`s may lie (default: the audio root);
    a path elsewhere is stored as "audio unavailable (reason)" and the import goes on.
    `options.references`: utt id → target text (the dataset's), for the failure items that
    carry none."""
    grader = artifact_grader(options.harness_version)
    path, doc = document.path, document.doc
    require(is_seed_tts(doc), path, "no seed_tts_* keys: not a vLLM-Omni seed-TTS results file")
    warnings: list[str] = []
    nightly = nightly_of(doc, path, options.nightly, options.built)
    clips, grades = _clips(document, options.audio_roots, options.references or {}, warnings)
    summary = _summary(doc, path, warnings)
    if clips:
        n_expected, status = len(clips), "complete"
    else:
        warnings.append(
            f"{path}: no per-item rows ({ITEMS}); imported as summary_only — "
            "the gate needs per-clip rows (rerun the harness with SEED_TTS_WER_SAVE_ITEMS=1, "
            "or SAVE_EVAL_ITEMS=1 after 0.30)"
        )
        counts = [doc.get(k) for k in SUMMARY_KEYS]
        n_expected = int(sum(c for c in counts if finite_number(c)))
        status = "summary_only"
    spec = imported_spec(
        path,
        benchmark,
        options.branch,
        nightly=nightly,
        status=status,
        n_expected=n_expected,
        commit_sha=options.commit,
        **harness_setup(document),
        prompt_fingerprint=prompt_fingerprint(flags.DEFAULT_SYSTEM_PROMPT),
        system_prompt=flags.DEFAULT_SYSTEM_PROMPT,
        summary=summary,
        source=document.source("vllm-omni-seed-tts"),
    )
    return ParsedArtifact(spec, clips, grades, grader, warnings)


def _clips(
    document: Document,
    audio_roots: list[str] | None,
    references: dict[str, str],
    warnings: list[str],
) -> tuple[list[ClipAudio], list[ClipGrade]]:
    """Every per-item row as a clip and its grade (none where nothing was graded), checked
    against the artifact's own summary; what could not be kept as given is said in `warnings`."""
    path, doc = document.path, document.doc
    items = doc.get(ITEMS)
    require(items is None or isinstance(items, list), path, f"'{ITEMS}' must be a list")
    items = items or []
    thinker = _thinker_texts(doc, path, len(items), warnings)
    clips: list[ClipAudio] = []
    grades: list[ClipGrade] = []
    seen: set[str] = set()
    unavailable: list[str] = []
    no_reference = 0
    for i, item in enumerate(items):
        where = f"{ITEMS}[{i}]"
        utt = _utterance_id(item, path, where, seen)
        ref = item.get("reference_raw", "")
        require(isinstance(ref, str), path, f"{where} ({utt}): 'reference_raw' must be a string")
        if "reference_raw" not in item:  # failure items carry none upstream
            ref = references.get(utt, "")
            no_reference += utt not in references
        text = thinker[i] if thinker else None
        clip, grade = _clip_from_item(item, i, utt, ref, text, path, where)
        clip = dataclasses.replace(clip, finish_reason=_finish_reason(item, path, where))
        clips.append(_checked_audio(clip, audio_roots, unavailable))
        if grade is not None:
            grades.append(grade)
    if clips:
        recomputed = official_summary(records_of(clips, grades))
        warnings += summary_mismatch(path, disagreements(doc, recomputed))
    if no_reference:
        warnings.append(
            f"{path}: {no_reference} failure items carry no reference text (upstream writes none "
            "for them); pass --dataset DIR (the seed-tts-eval locale dir) to fill them, so their "
            "question and task-leak flags are known"
        )
    if unavailable:
        warnings.append(
            f"{path}: {len(unavailable)} clips' audio_path refused and stored as audio "
            f"unavailable (first: {unavailable[0]}); grading, the report and Slack treat them "
            "as audio missing"
        )
    return clips, grades


def _utterance_id(item: Any, path: Path, where: str, seen: set[str]) -> str:
    """The item's utterance id (non-empty, short, not seen before), its texts checked."""
    require(isinstance(item, dict), path, f"{where} must be an object")
    utt = item.get("utterance_id")
    require(
        isinstance(utt, str) and bool(utt),
        path,
        f"{where}: 'utterance_id' must be a non-empty string",
    )
    for key in ("utterance_id", "reference_raw", "asr_raw", "detail", "locale"):
        check_item_text(item, key, path, where)
    require(len(utt) <= MAX_UTT_ID, path, f"{where}: 'utterance_id' longer than {MAX_UTT_ID}")
    require(utt not in seen, path, f"{where}: duplicate utterance_id {utt!r}")
    seen.add(utt)
    return str(utt)


def _summary(doc: JsonObject, path: Path, warnings: list[str]) -> JsonObject:
    """The artifact's own figures, with upstream main's finish-reason tally (after 0.30)."""
    summary = summary_figures(doc, "seed_tts_", ITEMS)
    reasons = doc.get("seed_tts_finish_reason_counts")
    if reasons is None:
        return summary
    if _reason_counts(reasons):
        summary["seed_tts_finish_reason_counts"] = reasons
    else:
        warnings.append(
            f"{path}: seed_tts_finish_reason_counts is not a small mapping of reason → "
            "count; not kept"
        )
    return summary


def is_seed_tts(doc: JsonObject) -> bool:
    return any(k.startswith("seed_tts_") for k in doc)


def locale_of(doc: JsonObject) -> str:
    """`zh` when every item that names a locale names a Chinese one, else `en`."""
    items = doc.get(ITEMS)
    langs = [
        _lang_of(i)
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and isinstance(i.get("locale"), str)
    ]
    return "zh" if langs and all(x == "zh" for x in langs) else "en"


def _checked_audio(clip: ClipAudio, roots: list[str] | None, refused: list[str]) -> ClipAudio:
    """The one path rule (audio.check_audio_uri): audio outside its root is never stored."""
    from omni_tasks.evidence.audio import AudioUnavailable, check_audio_uri

    if clip.audio_uri is None:
        return clip
    try:
        check_audio_uri(clip.audio_uri, roots)
        return clip
    except AudioUnavailable as exc:
        refused.append(f"{clip.utt_id}: {exc}")
        note = f"audio unavailable ({exc})"
        detail = f"{clip.error_detail}; {note}" if clip.error_detail else note
        return dataclasses.replace(clip, audio_uri=None, error_detail=detail)


def adopt_audio(art: ParsedArtifact, import_root: str) -> ParsedArtifact:
    """Copy the clips whose audio lies under `import_root` (an import's --audio-root) into the
    audio root, so every later reader (grading, report, Slack) needs only the audio root."""
    from omni_tasks.evidence.audio import load_audio_bytes

    root = get_settings().audio_root_url
    folder = f"{root}/.imports/{str(art.spec.source.get('sha256', 'artifact'))[:16]}"
    clips = []
    for c in art.clips:
        if c.audio_uri is not None and not under(c.audio_uri, root):
            target = f"{folder}/{path_component(c.utt_id)}.wav"
            with fsspec.open(target, "wb", auto_mkdir=True) as fh:
                fh.write(load_audio_bytes(c.audio_uri, [import_root]))
            c = dataclasses.replace(c, audio_uri=target)
        clips.append(c)
    return dataclasses.replace(art, clips=clips)


def _thinker_texts(
    doc: JsonObject, path: Path, n_items: int, warnings: list[str]
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


def _lang_of(item: JsonObject) -> str:
    """The item's own locale decides how it is scored (upstream: `zh…` per character)."""
    locale = item.get("locale")
    return "zh" if isinstance(locale, str) and locale.lower().startswith("zh") else "en"


def _finish_reason(item: JsonObject, path: Path, where: str) -> str | None:
    """The item's finish reason (upstream main: `finish_reason`, and `length_capped` when the
    token cap cut it short, which is the reason `length`)."""
    reason, capped = item.get("finish_reason"), item.get("length_capped")
    require(
        reason is None or _short_reason(reason),
        path,
        f"{where}: 'finish_reason' must be a short reason (stop, length, ...)",
    )
    require(
        capped is None or isinstance(capped, bool),
        path,
        f"{where}: 'length_capped' must be true or false",
    )
    require(
        not capped or reason in (None, "length"),
        path,
        f"{where}: length_capped with finish_reason {reason!r}",
    )
    return "length" if capped else reason if isinstance(reason, str) else None


def _short_reason(value: Any) -> bool:
    """A finish reason as upstream writes one (stop, length, ...)."""
    return isinstance(value, str) and 0 < len(value) <= 40 and value.isprintable()


def _reason_counts(value: Any) -> bool:
    """Upstream's finish-reason tally: at most 20 short reasons, each a count ≥ 0."""
    return (
        isinstance(value, dict)
        and len(value) <= 20
        and all(
            _short_reason(k) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10**7
            for k, v in value.items()
        )
    )


def _clip_from_item(
    item: JsonObject,
    ordinal: int,
    utt: str,
    ref: str,
    thinker_text: str | None,
    path: Path,
    where: str,
) -> tuple[ClipAudio, ClipGrade | None]:
    """The item's clip and its grade: the artifact's WER of its transcript, or what its error
    code says of it (nothing graded, an empty transcript, or the grader failing)."""
    audio = item.get("audio_path")
    lang = _lang_of(item)
    grade = functools.partial(
        ClipGrade,
        utt,
        thinker_wer=score(ref, thinker_text, lang).wer if thinker_text else None,
        is_question=flags.is_question(ref),
    )
    synth: SynthStatus = "ok"
    status: str | None = "graded"
    detail = None
    code = item.get("error")
    if "error" in item:
        require(
            isinstance(code, str) and code in ERROR_CODES,
            path,
            f"{where} ({utt}): unknown error code {code!r} "
            f"(expected one of {', '.join(ERROR_CODES)})",
        )
        synth, status = ERROR_CODES[str(code)]
        said = item.get("detail")
        detail = f"{code}: {said if isinstance(said, str) else ''}".strip()
    clip = ClipAudio(
        utt,
        ordinal,
        ref,
        synth,
        audio_uri=audio if isinstance(audio, str) else None,
        thinker_text=thinker_text,
        error_detail=detail,
    )
    if status is None:
        return clip, None
    if status == "grader_error":
        return clip, grade("grader_error", error_detail=str(code))
    if status == "empty_transcript":
        return clip, score(ref, "", lang).onto(grade("empty_transcript", hypothesis="", wer=1.0))
    wer = item.get("wer")
    require(
        finite_number(wer, MAX_WER) and wer >= 0,
        path,
        f"{where} ({utt}): 'wer' must be a finite number in [0, {MAX_WER:g}], "
        f"got {short_number(wer) if isinstance(wer, int | float) else repr(wer)[:40]}",
    )
    raw = item.get("asr_raw", "")
    require(isinstance(raw, str), path, f"{where} ({utt}): 'asr_raw' must be a string")
    hyp = str(raw)
    graded = grade(
        "graded",
        hypothesis=hyp,
        wer=float(wer),  # type: ignore[arg-type]
        task_leak=flags.task_leak(ref, hyp, flags.DEFAULT_SYSTEM_PROMPT),
        sim=_secondary(item, "sim", path, f"{where} ({utt})"),
        utmos=_secondary(item, "utmos", path, f"{where} ({utt})"),
    )
    return clip, score(ref, hyp, lang).onto(graded)


# Secondary scores upstream may add to an item: speaker similarity (a cosine) and predicted MOS.
SECONDARY_RANGES = {"sim": (-1.0, 1.0), "utmos": (0.0, 10.0)}


def _secondary(item: JsonObject, key: str, path: Path, where: str) -> float | None:
    value = item.get(key)
    if value is None:
        return None
    return bounded_number(value, *SECONDARY_RANGES[key], path, f"{where}: {key!r}")
