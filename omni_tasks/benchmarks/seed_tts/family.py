"""Seed-TTS (seed-tts-eval through vLLM-Omni): speech out, graded by WER; one benchmark per
locale, since a locale is its own dataset and its own normalization (zh per character).

Its import of upstream's results JSON is `artifact.py`, its runner `run.py`. Its dataset
(`dataset.py`, the meta.lst layout) and request (`synthesis/protocol.py`) are shared with the
simulator and the client, and stay there.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from omni_tasks.analysis.official import FAILED_REQUEST, FIGURES, official_summary
from omni_tasks.benchmarks.artifact import Document, ParsedArtifact
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, RunOption, Words
from omni_tasks.benchmarks.seed_tts.artifact import is_seed_tts, locale_of, parse_document
from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipRecord

if TYPE_CHECKING:
    import psycopg

    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest
    from omni_tasks.grading.asr import GraderSpec, LoadedGrader


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
        "endpoint": RunOption(
            "chat",
            {"type": "string", "enum": ["chat", "audio-speech"]},
            "Endpoint",
            "chat (/v1/chat/completions, an omni model) or audio-speech (/v1/audio/speech, "
            "a TTS model)",
            examples=("chat", "audio-speech"),
            form=False,
        ),
    }
)


class SeedTts(Benchmark):
    family = "seed_tts"
    metric = "wer"
    judged = "wer"
    words = Words("clip", "clips", "heard", "WER", "broken clips", "no audio")
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
        if config.get("endpoint"):
            args += ["--endpoint", str(config["endpoint"])]
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
        return parse_document(document, options, self.id)


def _bench(req: RunRequest) -> BenchRequest:
    """A request as seed-TTS's (a generic one with every option at its default)."""
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest

    return req if isinstance(req, BenchRequest) else BenchRequest.of(req)


@functools.lru_cache(maxsize=1)
def _grader(spec: GraderSpec) -> LoadedGrader:
    """The ASR model loaded once per process: a bisect runs the family many times."""
    from omni_tasks.grading.backends import load_grader

    return load_grader(spec)
