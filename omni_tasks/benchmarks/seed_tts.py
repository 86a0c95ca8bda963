"""Seed-TTS (seed-tts-eval through vLLM-Omni): speech out, graded by WER; one benchmark per
locale, since a locale is its own dataset and its own normalization (zh per character)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omni_tasks.analysis.official import FIGURES, official_summary
from omni_tasks.benchmarks.base import Benchmark, ImportOptions
from omni_tasks.importers.artifact import Document, ParsedArtifact
from omni_tasks.importers.vllm_omni import is_seed_tts, locale_of, parse_artifact
from omni_tasks.records import ClipRecord


class SeedTts(Benchmark):
    family = "seed_tts"
    metric = "wer"
    judged = "wer"
    breakdowns = ("failure_mode", "origin")  # derived from each broken clip
    runnable = True
    legacy_mean_figure = "seed_tts_content_error_mean"

    def __init__(self, locale: str) -> None:
        self.locale = locale
        self.id = f"seed_tts_{locale}"
        self.description = f"seed-tts-eval {locale}: synthesized speech, WER by Whisper"

    def claims(self, doc: dict[str, Any]) -> bool:
        return is_seed_tts(doc) and locale_of(doc) == self.locale

    @property
    def figures(self) -> tuple[str, ...]:
        return FIGURES

    def official_line(self, o: dict[str, Any]) -> str:
        def f(v: Any) -> str:
            return "—" if v is None else f"{v:.4f}"

        return (
            f"{f(o.get('seed_tts_content_error_mean'))} over {o.get('seed_tts_content_evaluated')} "
            f"(median {f(o.get('seed_tts_content_error_median'))}; failed: request "
            f"{o.get('seed_tts_request_failed')}, no pcm {o.get('seed_tts_no_pcm')}, asr "
            f"{o.get('seed_tts_asr_failed')})"
        )

    def official_summary(self, clips: Sequence[ClipRecord]) -> dict[str, Any]:
        return official_summary(clips)

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
        )
