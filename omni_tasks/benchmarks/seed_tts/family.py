"""Seed-TTS (seed-tts-eval through vLLM-Omni): speech out, graded by WER; one benchmark per
locale, since a locale is its own dataset and its own normalization (zh per character).

This module owns the family's import of upstream's results JSON (REFERENCE.md §1): one file is
one run (status `complete` with per-item rows, `summary_only` without), every clip, and one
grading whose grader is "from artifact". Its dataset (`dataset.py`, the meta.lst layout) and
request (`synthesis/protocol.py`) are shared with the simulator and the client, and stay
there.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import fsspec

from omni_tasks.analysis.official import (
    FAILED_REQUEST,
    FIGURES,
    disagreements,
    official_summary,
)
from omni_tasks.benchmarks.artifact import (
    MAX_UTT_ID,
    MAX_WER,
    ArtifactError,
    Document,
    ParsedArtifact,
    bounded_number,
    check_item_text,
    finite_number,
    nightly_of,
    read_document,
    require,
    short_number,
    summary_figures,
    summary_mismatch,
)
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, RunOption
from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.grading import flags
from omni_tasks.grading.wer import NORMALIZER_VERSION, score
from omni_tasks.harness import BARE_ARTIFACT_GRADER, UnknownHarness, harness_window
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import (
    ClipAudio,
    ClipGrade,
    ClipRecord,
    Execution,
    Grader,
    RunSpec,
    SynthStatus,
    records_of,
)
from omni_tasks.trust.names import InvalidName, check_name, path_component, under

if TYPE_CHECKING:
    import psycopg

    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest
    from omni_tasks.grading.asr import GraderSpec, LoadedGrader


ARTIFACT_GRADER = Grader(
    grader_id=BARE_ARTIFACT_GRADER,
    description={
        "backend": "artifact",
        "source": "vLLM-Omni seed-TTS harness (Whisper large-v3, transformers, fp32, 30 s window)",
        "normalizer": NORMALIZER_VERSION,
        "note": "WER as reported by the artifact; word counts recomputed by omni-tasks",
    },
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


def parse_artifact(
    path: Path,
    *,
    branch: str,
    benchmark: str = "seed_tts_en",
    commit: str | None = None,
    nightly: dt.date | None = None,
    system_prompt: str = flags.DEFAULT_SYSTEM_PROMPT,
    audio_roots: list[str] | None = None,
    references: dict[str, str] | None = None,
    harness_version: str | None = None,
    built: dt.date | None = None,
) -> ParsedArtifact:
    """`audio_roots`: where the items' `audio_path`s may lie (default: the audio root); a path
    elsewhere is stored as "audio unavailable (reason)" and the import goes on. `references`:
    utt id → target text (the dataset's), for the failure items that carry none."""
    grader = artifact_grader(harness_version)
    read = read_document(path)
    doc = read.doc
    require(is_seed_tts(doc), path, "no seed_tts_* keys: not a vLLM-Omni seed-TTS results file")
    warnings: list[str] = []
    nightly = nightly_of(doc, path, nightly, built)

    items = doc.get("seed_tts_wer_eval_items")
    require(
        items is None or isinstance(items, list), path, "'seed_tts_wer_eval_items' must be a list"
    )
    clips: list[ClipAudio] = []
    grades: list[ClipGrade] = []
    thinker = _thinker_texts(doc, path, len(items or []), warnings)
    seen: set[str] = set()
    unavailable: list[str] = []
    no_reference = 0
    for i, item in enumerate(items or []):
        where = f"seed_tts_wer_eval_items[{i}]"
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
        ref = item.get("reference_raw", "")
        require(isinstance(ref, str), path, f"{where} ({utt}): 'reference_raw' must be a string")
        if not ref and "reference_raw" not in item:  # failure items carry none upstream
            if references is not None and utt in references:
                ref = references[utt]
            else:
                no_reference += 1
        text = thinker[i] if thinker else None
        clip, grade = _clip_from_item(item, i, utt, ref, text, system_prompt, path, where)
        clip = dataclasses.replace(clip, finish_reason=_finish_reason(item, path, where))
        clip = _checked_audio(clip, audio_roots, unavailable)
        clips.append(clip)
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
    summary = summary_figures(doc, "seed_tts_", "seed_tts_wer_eval_items")
    reasons = doc.get("seed_tts_finish_reason_counts")  # upstream main, after 0.30
    if reasons is not None:
        if _reason_counts(reasons):
            summary["seed_tts_finish_reason_counts"] = reasons
        else:
            warnings.append(
                f"{path}: seed_tts_finish_reason_counts is not a small mapping of reason → "
                "count; not kept"
            )
    if clips:
        n_expected, status = len(clips), "complete"
    else:
        warnings.append(
            f"{path}: no per-item rows (seed_tts_wer_eval_items); imported as summary_only — "
            "the gate needs per-clip rows (rerun the harness with SEED_TTS_WER_SAVE_ITEMS=1, "
            "or SAVE_EVAL_ITEMS=1 after 0.30)"
        )
        counts = [doc.get(k) for k in SUMMARY_KEYS]
        n_expected = int(sum(c for c in counts if finite_number(c)))
        status = "summary_only"
    execution: Execution = {}
    if finite_number(doc.get("max_concurrency")):
        execution["client_concurrency"] = doc["max_concurrency"]
    try:
        check_name(branch, "branch")
        check_name(benchmark, "benchmark")
    except InvalidName as exc:
        raise ArtifactError(f"{path}: {exc}") from None
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
        prompt_fingerprint=prompt_fingerprint(system_prompt),
        system_prompt=system_prompt,
        summary=summary,
        source=read.source("vllm-omni-seed-tts"),
    )
    return ParsedArtifact(spec, clips, grades, grader, warnings)


def is_seed_tts(doc: JsonObject) -> bool:
    return any(k.startswith("seed_tts_") for k in doc)


def locale_of(doc: JsonObject) -> str:
    """`zh` when every item that names a locale names a Chinese one, else `en`."""
    items = doc.get("seed_tts_wer_eval_items")
    locales = [
        i.get("locale").lower()  # type: ignore[union-attr]
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and isinstance(i.get("locale"), str)
    ]
    return "zh" if locales and all(x.startswith("zh") for x in locales) else "en"


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
    reason = item.get("finish_reason")
    require(
        reason is None
        or (isinstance(reason, str) and 0 < len(reason) <= 40 and reason.isprintable()),
        path,
        f"{where}: 'finish_reason' must be a short reason (stop, length, ...)",
    )
    capped = item.get("length_capped")
    require(
        capped is None or isinstance(capped, bool),
        path,
        f"{where}: 'length_capped' must be true or false",
    )
    if capped and reason is None:
        return "length"
    require(
        not (capped and reason != "length"),
        path,
        f"{where}: length_capped with finish_reason {reason!r}",
    )
    return reason if isinstance(reason, str) else None


def _reason_counts(value: Any) -> bool:
    """Upstream's finish-reason tally: at most 20 short reasons, each a count ≥ 0."""
    return (
        isinstance(value, dict)
        and len(value) <= 20
        and all(
            isinstance(k, str)
            and 0 < len(k) <= 40
            and k.isprintable()
            and isinstance(v, int)
            and not isinstance(v, bool)
            and 0 <= v <= 10**7
            for k, v in value.items()
        )
    )


def _clip_from_item(
    item: JsonObject,
    ordinal: int,
    utt: str,
    ref: str,
    thinker_text: str | None,
    system_prompt: str,
    path: Path,
    where: str,
) -> tuple[ClipAudio, ClipGrade | None]:
    audio = item.get("audio_path")
    audio_uri = audio if isinstance(audio, str) else None
    lang = _lang_of(item)
    question = flags.is_question(ref)
    thinker_wer = score(ref, thinker_text, lang).wer if thinker_text else None
    if "error" in item:
        code = item["error"]
        require(
            isinstance(code, str) and code in ERROR_CODES,
            path,
            f"{where} ({utt}): unknown error code {code!r} "
            f"(expected one of {', '.join(ERROR_CODES)})",
        )
        synth, grade_status = ERROR_CODES[str(code)]
        detail = item.get("detail")
        clip = ClipAudio(
            utt,
            ordinal,
            ref,
            synth,
            audio_uri=audio_uri,
            thinker_text=thinker_text,
            error_detail=f"{code}: {detail if isinstance(detail, str) else ''}".strip(),
        )
        if grade_status is None:
            return clip, None
        if grade_status == "empty_transcript":
            empty = ClipGrade(
                utt,
                "empty_transcript",
                hypothesis="",
                wer=1.0,
                thinker_wer=thinker_wer,
                is_question=question,
            )
            return clip, score(ref, "", lang).onto(empty)
        return clip, ClipGrade(
            utt,
            "grader_error",
            thinker_wer=thinker_wer,
            is_question=question,
            error_detail=str(code),
        )
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
    clip = ClipAudio(utt, ordinal, ref, "ok", audio_uri=audio_uri, thinker_text=thinker_text)
    graded = ClipGrade(
        utt,
        "graded",
        hypothesis=hyp,
        wer=float(wer),  # type: ignore[arg-type]
        thinker_wer=thinker_wer,
        task_leak=flags.task_leak(ref, hyp, system_prompt),
        is_question=question,
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


# Seed-TTS's run options (its BenchRequest's fields): what a config, a form or a flag sets.
OPTIONS = MappingProxyType(
    {
        "transcript_mode": RunOption(
            False, {"type": "boolean"}, "Transcript mode", "Simulator targets only: no audio (fast)"
        ),
        "prompt_template": RunOption(
            "seed-tts-default",
            {"type": "string", "maxLength": 60},
            "Prompt template",
            "seed-tts-default (the harness's) or read-aloud",
            examples=("seed-tts-default", "read-aloud"),
        ),
        "audio_cap_s": RunOption(
            60.0, {"type": "number"}, "Audio cap", "Audio read per clip (s)", form=False
        ),
        "voices": RunOption(
            1, {"type": "integer"}, "Voices", "Reference voices mixed round-robin", form=False
        ),
    }
)


class SeedTts(Benchmark):
    family = "seed_tts"
    metric = "wer"
    judged = "wer"
    breakdowns = ("failure_mode", "origin")  # derived from each broken clip
    runnable = True
    capabilities = frozenset({"ab", "bisect", "ablate", "concurrency"})
    legacy_mean_figure = "seed_tts_content_error_mean"
    gate_figure = ("seed_tts_content_error_mean", "<=")
    dataset_file = "meta.lst"  # a seed-tts-eval locale dir
    diagnoses = frozenset({"failure_modes", "questions"})
    options = OPTIONS

    def __init__(self, locale: str) -> None:
        self.locale = locale
        self.id = f"seed_tts_{locale}"
        self.description = f"seed-tts-eval {locale}: synthesized speech, WER by Whisper"

    def claims(self, doc: JsonObject) -> bool:
        return is_seed_tts(doc) and locale_of(doc) == self.locale

    @property
    def bench_option(self) -> str:
        return "seed_tts"  # the locale follows the dataset

    def request(self, generic: RunRequest, options: Mapping[str, object]) -> RunRequest:
        from omni_tasks.benchmarks.seed_tts.run import BenchRequest

        self.check_options(options)
        return BenchRequest.of(generic, **options)

    def graded_by_asr(self, options: Mapping[str, object]) -> bool:
        return not options.get("transcript_mode")

    def reproduce_args(self, config: JsonObject) -> list[str]:
        args = ["--prompt-template", str(config.get("prompt_template", "seed-tts-default"))]
        return args + (["--transcript-mode"] if config.get("transcript_mode") else [])

    def run(
        self,
        conn: psycopg.Connection[Any],
        req: RunRequest,
        grader: JsonObject,
        *,
        show_progress: bool = False,
    ) -> str:
        """Synthesize every utterance (run.run_benchmark: the harness's request, streamed),
        grade with Whisper (none in transcript mode), store per clip."""
        from omni_tasks.benchmarks.seed_tts.run import run_benchmark
        from omni_tasks.grading.asr import GraderSpec

        bench = _bench(req)
        loaded = None if bench.transcript_mode else _grader(GraderSpec.from_params(grader))
        return run_benchmark(conn, bench, loaded, show_progress=show_progress).run_key

    def thinker_texts(self, req: RunRequest) -> dict[str, str | None]:
        """The thinker alone (the talker skipped) on each chosen utterance, on the same target."""
        from omni_tasks.benchmarks.seed_tts.run import dataset_of, target_url, utterances_of
        from omni_tasks.synthesis import protocol
        from omni_tasks.synthesis.thinker import thinker_texts

        bench = _bench(req)
        utterances = utterances_of(bench, dataset_of(bench))
        template = protocol.prompt_template(bench.prompt_template)
        with target_url(bench) as url:
            return thinker_texts(url, list(utterances), template, model=bench.model)

    def reference_voices(self, req: RunRequest) -> tuple[dict[str, str], dict[str, Path]]:
        from omni_tasks.benchmarks.seed_tts.run import dataset_of

        bench = _bench(req)
        if bench.voices == 1:
            return {}, {}
        ds = dataset_of(bench)
        own = {u.utt_id: u.prompt_wav.stem for u in ds.utterances}
        return own, {u.prompt_wav.stem: u.prompt_wav for u in ds.utterances[: bench.voices]}

    def subset_fingerprint(self, dataset: str, limit: int | None) -> str:
        from omni_tasks.benchmarks.seed_tts.run import subset_fingerprint
        from omni_tasks.dataset import load_dataset

        ds = load_dataset(dataset)
        return subset_fingerprint(ds, len(ds.limit(limit)))

    @property
    def figures(self) -> tuple[str, ...]:
        return FIGURES

    def official_line(self, o: JsonObject) -> str:
        def f(v: Any) -> str:
            return "—" if v is None else f"{v:.4f}"

        return (
            f"{f(o.get('seed_tts_content_error_mean'))} over {o.get('seed_tts_content_evaluated')} "
            f"(median {f(o.get('seed_tts_content_error_median'))}; failed: request "
            f"{o.get('seed_tts_request_failed')}, no pcm {o.get('seed_tts_no_pcm')}, asr "
            f"{o.get('seed_tts_asr_failed')})"
        )

    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
        return official_summary(clips)

    def figure_values(self, figure: str, clips: Sequence[ClipRecord]) -> list[float | None]:
        # As upstream's means: a failed request is left out of both; the WER mean counts
        # only graded clips (and, as official_summary, none cut at our audio cap), the SIM
        # mean only clips with a similarity.
        if figure == "seed_tts_content_error_mean":
            return [
                c.wer
                if c.grade_status == "graded"
                and c.synth_status not in (*FAILED_REQUEST, "over_long")
                else None
                for c in clips
            ]
        if figure == "seed_tts_sim_mean":
            return [c.sim if c.synth_status not in FAILED_REQUEST else None for c in clips]
        return super().figure_values(figure, clips)

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        return parse_artifact(
            document.path,
            branch=options.branch,
            benchmark=self.id,
            commit=options.commit,
            nightly=options.nightly,
            audio_roots=options.audio_roots,
            references=options.references,
            harness_version=options.harness_version,
            built=options.built,
        )


def _bench(req: RunRequest) -> BenchRequest:
    """A request as seed-TTS's (a generic one with every option at its default)."""
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest

    return req if isinstance(req, BenchRequest) else BenchRequest.of(req)


@functools.lru_cache(maxsize=1)
def _grader(spec: GraderSpec) -> LoadedGrader:
    """The ASR model loaded once per process: a bisect runs the family many times."""
    from omni_tasks.grading.backends import load_grader

    return load_grader(spec)
