"""LibriSpeech-style ASR: speech in, text out. Each utterance is sent to the model with the
instruction to transcribe it; the answer is scored by WER against the reference (seed-tts-eval
normalization, English). Broken when WER > τ; no seed-TTS diagnosis (a wrong transcript is not a
talker failure), so the statistics give it the tail, the paired test and corpus WER only.

Dataset: a LibriSpeech root (`SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt`, lines `UTT-ID TEXT`)
with each utterance's audio as `UTT-ID.wav` beside its transcript file (16 kHz mono; convert
LibriSpeech's FLAC once, e.g. `ffmpeg -i X.flac X.wav`: only WAV is decoded from data).
`demo` is a shipped set for the simulator: each WAV carries its text in its INFO comment.

It is the "Adding a benchmark" example of a runnable family (docs/contributors/benchmarks.md):
this module and one registry line.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import soundfile as sf

from omni_tasks.benchmarks.base import Benchmark, ImportOptions
from omni_tasks.config import get_settings
from omni_tasks.grading.wer import NORMALIZER_VERSION, score
from omni_tasks.importers.artifact import ArtifactError, Document, ParsedArtifact
from omni_tasks.names import check_name, check_text, printable
from omni_tasks.progress import progress_bar
from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.records import ClipAudio, ClipGrade, ClipRecord, Grader, RunSpec

if TYPE_CHECKING:
    import psycopg

    from omni_tasks.benchmarks.run_seed_tts import BenchRequest

INSTRUCTION = "Transcribe the audio into text."
MAX_UTTERANCES = 100_000
MAX_AUDIO_BYTES = 16 * 1024 * 1024  # one utterance, as the simulator accepts it inline
MAX_TEXT = 4096
DEMO_META = Path(__file__).resolve().parent.parent / "datasets" / "demo" / "meta.lst"
DEMO_RATE = 16_000
GRADER = Grader(
    grader_id=f"asr-answer:{NORMALIZER_VERSION}",
    description={"backend": "answer", "scorer": "seed-tts-eval WER of the returned text"},
)


class DatasetError(ValueError):
    """A malformed LibriSpeech root: the message names the file and line."""


@dataclass(frozen=True)
class Utterance:
    utt_id: str
    text: str
    audio: Path


def load_utterances(root: Path) -> tuple[list[Utterance], str]:
    """Every utterance under `root` in a stable order, and the set's fingerprint."""
    found: list[Utterance] = []
    digest = hashlib.sha256()
    for trans in sorted(root.rglob("*.trans.txt")):
        for n, line in enumerate(trans.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            utt, _, text = line.strip().partition(" ")
            where = f"{trans}:{n}"
            if not text:
                raise DatasetError(f"{where}: expected `UTT-ID TEXT`")
            try:
                check_name(utt, f"{where}: utterance id")
                check_text(text, f"{where}: text", max_len=MAX_TEXT)
            except ValueError as exc:
                raise DatasetError(str(exc)) from None
            if "/" in utt or utt.startswith("."):
                raise DatasetError(f"{where}: utterance id {utt[:60]!r} is not a file name")
            found.append(Utterance(utt, text, trans.parent / f"{utt}.wav"))
            digest.update(f"{utt}\t{text}\n".encode())
            if len(found) > MAX_UTTERANCES:
                raise DatasetError(f"{root}: more than {MAX_UTTERANCES} utterances")
    if not found:
        raise DatasetError(f"{root}: no *.trans.txt with utterances")
    return found, digest.hexdigest()[:16]


def ensure_demo_set(cache: Path) -> Path:
    """The demo set: the first 24 sentences of the seed-TTS demo corpus as one chapter, each
    WAV a short tone whose INFO comment holds what is said (what the simulator "hears")."""
    root = cache / "datasets" / "demo_librispeech" / "1" / "1"
    lines = []
    for row in DEMO_META.read_text(encoding="utf-8").splitlines()[:24]:
        utt, text = row.split("|")[0].replace("demo_", "1-1-"), row.split("|")[3]
        lines.append(f"{utt} {text.upper()}")
        wav = root / f"{utt}.wav"
        if not wav.is_file():
            root.mkdir(parents=True, exist_ok=True)
            buf = io.BytesIO()
            with sf.SoundFile(buf, "w", DEMO_RATE, 1, "PCM_16", format="WAV") as f:
                f.comment = text.upper()
                t = np.arange(DEMO_RATE // 2) / DEMO_RATE
                f.write((0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32))
            wav.write_bytes(buf.getvalue())
    trans = root / "1-1.trans.txt"
    body = "\n".join(lines) + "\n"
    if not trans.is_file() or trans.read_text(encoding="utf-8") != body:
        trans.write_text(body, encoding="utf-8")
    return root.parent.parent


def request_body(model: str, wav: bytes, seed: int | None) -> dict[str, Any]:
    """One transcription request: the audio inline, the instruction, text out."""
    audio = "data:audio/wav;base64," + base64.b64encode(wav).decode()
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "audio_url", "audio_url": {"url": audio}},
                    {"type": "text", "text": INSTRUCTION},
                ],
            }
        ],
        "modalities": ["text"],
        "stream": False,
        "temperature": 0.0,
        "max_tokens": 256,
    }
    if seed is not None:
        body["seed"] = seed
    return body


class LibriSpeech(Benchmark):
    id = "librispeech"
    family = "asr_wer"
    metric = "wer"
    judged = "wer"
    runnable = True
    capabilities = frozenset({"ab"})
    description = "LibriSpeech-style ASR: speech in, text out, WER of the transcript"
    figures = ("asr_corpus_wer", "asr_evaluated", "asr_request_failed")

    def check_dataset(self, dataset: str) -> str | None:
        if dataset == "demo" or any(Path(dataset).rglob("*.trans.txt")):
            return None
        return f"{dataset} has no *.trans.txt (a LibriSpeech root, or demo)"

    def claims(self, doc: dict[str, Any]) -> bool:
        return False  # upstream writes no ASR artifact yet

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        raise ArtifactError(f"{document.path}: {self.id} has no upstream artifact to import")

    def official_summary(self, clips: Sequence[ClipRecord]) -> dict[str, Any]:
        """Corpus WER (word errors over reference words, LibriSpeech's figure) over the
        transcribed utterances; failed requests counted apart."""
        graded = [c for c in clips if c.synth_status == "ok" and c.ref_words]
        words = sum(c.ref_words or 0 for c in graded)
        errors = sum((c.wer or 0.0) * (c.ref_words or 0) for c in graded)
        return {
            "asr_corpus_wer": errors / words if words else None,
            "asr_evaluated": len(graded),
            "asr_request_failed": sum(c.synth_status == "request_failed" for c in clips),
        }

    def run(
        self,
        conn: psycopg.Connection[Any],
        req: BenchRequest,
        grader: dict[str, Any],
        *,
        show_progress: bool = False,
    ) -> str:
        from omni_tasks.benchmarks.run_choices import Answer, post_json, served_target
        from omni_tasks.store import runs

        root = ensure_demo_set(get_settings().cache_dir) if req.dataset == "demo" else None
        utts, fingerprint = load_utterances(root or Path(req.dataset))
        utts = utts[: req.limit] if req.limit else utts

        async def ask_all(url: str) -> list[Answer]:
            gate = asyncio.Semaphore(8)
            with progress_bar(show_progress) as bar:
                task = bar.add_task(f"transcribing {len(utts)} utterances", total=len(utts))
                async with httpx.AsyncClient(timeout=120.0) as client:

                    async def one(u: Utterance) -> Answer:
                        try:
                            wav = u.audio.read_bytes()
                        except OSError as exc:
                            return Answer("request_failed", None, f"audio: {exc.strerror}")
                        if len(wav) > MAX_AUDIO_BYTES:
                            return Answer("request_failed", None, "audio over 16 MiB")
                        async with gate:
                            got = await post_json(
                                client, url, request_body(req.model, wav, req.seed)
                            )
                        bar.advance(task, failed=int(got.status != "ok"))
                        return got

                    return list(await asyncio.gather(*(one(u) for u in utts)))

        with served_target(req.target) as url:
            answers = asyncio.run(ask_all(url))
        clips, grades = [], []
        for i, (u, a) in enumerate(zip(utts, answers, strict=True)):
            if a.status != "ok" or a.text is None:
                clips.append(ClipAudio(u.utt_id, i, u.text, "request_failed", error_detail=a.error))
                continue
            clips.append(ClipAudio(u.utt_id, i, u.text, "ok", thinker_text=a.text))
            w = score(u.text, a.text)
            heard = printable(a.text)
            fields: dict[str, Any] = dict(w.grade_fields())
            status = "graded" if w.hyp_words else "empty_transcript"
            grades.append(
                ClipGrade(u.utt_id, status, hypothesis=heard, wer=w.wer, **fields)  # type: ignore[arg-type]
            )
        failed = sum(c.synth_status != "ok" for c in clips)
        spec = RunSpec(
            benchmark=self.id,
            model=req.model,
            lane=req.lane,
            nightly=req.nightly or dt.datetime.now(dt.UTC).date(),
            branch=req.branch,
            trigger=req.trigger,
            status="complete" if failed < len(clips) else "failed",
            n_expected=len(utts),
            commit_sha=req.commit,
            variant=req.variant,
            config={"target": req.target, "dataset": req.dataset, "model": req.model},
            stack={"simulated": req.target.startswith("simulator:")},
            dataset_fingerprint=fingerprint + (f":first{req.limit}" if req.limit else ""),
            prompt_fingerprint=prompt_fingerprint("", INSTRUCTION),
            seed=req.seed,
            airflow_dag_id=req.airflow_dag_id,
            airflow_run_id=req.airflow_run_id,
        )
        saved = runs.save_run(conn, spec, clips, (GRADER, grades), replace=True)
        conn.commit()
        return saved.run_key
