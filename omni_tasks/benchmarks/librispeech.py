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

import base64
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omni_tasks.benchmarks.artifact import ArtifactError, Document, ParsedArtifact
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, Words
from omni_tasks.benchmarks.suite import ItemSet, ItemSuite
from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.grading.wer import NORMALIZER_VERSION, score
from omni_tasks.records import ClipGrade, ClipRecord, Grader, GradeStatus
from omni_tasks.trust.names import check_name, check_text, printable

if TYPE_CHECKING:
    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.synthesis.profiles import Profile

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
    key: str  # the utterance id
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
    import numpy as np
    import soundfile as sf

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


def request_body(model: str, wav: bytes, seed: int | None) -> JsonObject:
    """One transcription request: the audio inline, the instruction, text out."""
    audio = "data:audio/wav;base64," + base64.b64encode(wav).decode()
    body: JsonObject = {
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


class LibriSpeechSuite(ItemSuite):
    """Each utterance's audio sent inline with the instruction; its transcript scored by WER."""

    grader = GRADER
    system_text = ""
    user_format = INSTRUCTION

    def load(self, dataset: str) -> ItemSet:
        root = ensure_demo_set(get_settings().cache_dir) if dataset == "demo" else Path(dataset)
        utts, fingerprint = load_utterances(root)
        return ItemSet(tuple(utts), fingerprint)

    def reference(self, item: Utterance) -> str:
        return item.text

    def request_body(self, item: Utterance, req: RunRequest) -> JsonObject:
        wav = item.audio.read_bytes()  # OSError: a failed request naming why
        if len(wav) > MAX_AUDIO_BYTES:
            raise ValueError("audio over 16 MiB")
        return request_body(req.model, wav, req.seed)

    def judge(self, item: Utterance, text: str) -> ClipGrade:
        w = score(item.text, text)
        status: GradeStatus = "graded" if w.hyp_words else "empty_transcript"
        return w.onto(ClipGrade(item.key, status, hypothesis=printable(text), wer=w.wer))

    def simulate(self, body: JsonObject, profile: Profile, seed: int) -> str | None:
        """It "hears" what the WAV's INFO comment says (synthesis/transcribe.py)."""
        from omni_tasks.synthesis import transcribe

        if not transcribe.is_transcription_request(body):
            return None
        return transcribe.answer(body, profile, seed)


class LibriSpeech(Benchmark):
    id = "librispeech"
    family = "asr_wer"
    metric = "wer"
    judged = "wer"
    words = Words(
        "utterance", "utterances", "transcribed", "WER", "broken utterances", "no transcript"
    )
    suite = LibriSpeechSuite()
    description = "LibriSpeech-style ASR: speech in, text out, WER of the transcript"
    figures = ("asr_corpus_wer", "asr_evaluated", "asr_request_failed")

    def check_dataset(self, dataset: str) -> str | None:
        if dataset == "demo" or any(Path(dataset).rglob("*.trans.txt")):
            return None
        return f"{dataset} has no *.trans.txt (a LibriSpeech root, or demo)"

    def claims(self, doc: JsonObject) -> bool:
        return False  # upstream writes no ASR artifact yet

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        raise ArtifactError(f"{document.path}: {self.id} has no upstream artifact to import")

    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
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
