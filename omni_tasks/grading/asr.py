"""Speech recognition for grading: one interface, three Whisper backends.

Every backend turns 16 kHz mono clips into transcripts; the seed-tts-eval scorer in
`grading.wer` scores them all. The grader id pins everything that changes a transcript
(backend, model weights, precision, window policy, decoding options, normalizer), so two
gradings with different ids are never silently compared.

Window policies: `truncate30` hears only the first 30 s of a clip, exactly like the reference
harness (its feature extractor takes one padded 30 s window); `longform` hears the whole clip
(for diagnosing runaways; not comparable with history).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from omni_tasks.grading.wer import NORMALIZER_VERSION

Backend = Literal["transformers", "openai-whisper", "faster-whisper"]
Window = Literal["truncate30", "longform"]
BACKENDS: tuple[str, ...] = ("transformers", "openai-whisper", "faster-whisper")
WINDOWS: tuple[str, ...] = ("truncate30", "longform")
WINDOW_SAMPLES = 30 * 16_000
WINDOW_FRAMES = 3000

DEFAULT_MODEL: dict[str, str] = {
    "faster-whisper": "tiny.en",
    "transformers": "openai/whisper-large-v3",
    "openai-whisper": "large-v3",
}
DEFAULT_PRECISION: dict[str, str] = {
    "faster-whisper": "int8",
    "transformers": "fp32",
    "openai-whisper": "fp32",
}
PRECISIONS: dict[str, tuple[str, ...]] = {
    "faster-whisper": ("int8", "int8_float32", "float32", "float16", "int8_float16"),
    "transformers": ("fp32", "fp16", "bf16"),
    "openai-whisper": ("fp32", "fp16"),
}


class GraderConfigError(ValueError):
    """A grader specification that cannot be built."""


@dataclass(frozen=True)
class GraderSpec:
    """What to grade with. Device and batch size change speed, not the grader id."""

    backend: str = "faster-whisper"
    model: str | None = None
    precision: str | None = None
    window: str = "truncate30"
    beam_size: int = 1
    max_new_tokens: int = 224
    language: str = "en"
    device: str = "cpu"
    batch_size: int = 8

    def resolved(self) -> GraderSpec:
        if self.backend not in BACKENDS:
            raise GraderConfigError(
                f"unknown ASR backend {self.backend!r}; choose one of {BACKENDS}"
            )
        if self.window not in WINDOWS:
            raise GraderConfigError(
                f"unknown window policy {self.window!r}; choose one of {WINDOWS}"
            )
        if self.backend == "transformers" and self.window != "truncate30":
            raise GraderConfigError(
                "the transformers backend reproduces the reference harness: "
                "window 'truncate30' only"
            )
        precision = self.precision or DEFAULT_PRECISION[self.backend]
        if precision not in PRECISIONS[self.backend]:
            raise GraderConfigError(
                f"precision {precision!r} is not available for {self.backend}; "
                f"choose one of {PRECISIONS[self.backend]}"
            )
        if self.beam_size < 1 or self.batch_size < 1 or self.max_new_tokens < 1:
            raise GraderConfigError("beam size, batch size and max new tokens must be positive")
        return GraderSpec(
            backend=self.backend,
            model=self.model or DEFAULT_MODEL[self.backend],
            precision=precision,
            window=self.window,
            beam_size=self.beam_size,
            max_new_tokens=self.max_new_tokens,
            language=self.language,
            device=self.device,
            batch_size=self.batch_size,
        )

    @property
    def decoding(self) -> str:
        search = "greedy" if self.beam_size == 1 else f"beam{self.beam_size}"
        return f"{search}-t0-max{self.max_new_tokens}-{self.language}"

    def grader_id(self, model_label: str) -> str:
        return "/".join(
            (self.backend, model_label, str(self.precision), self.window, self.decoding,
             NORMALIZER_VERSION)
        )  # fmt: skip


@dataclass(frozen=True)
class LoadedGrader:
    """A ready backend and the identity of what it grades with."""

    spec: GraderSpec
    model_label: str
    backend: Transcriber

    @property
    def grader_id(self) -> str:
        return self.spec.grader_id(self.model_label)

    def description(self) -> dict[str, Any]:
        described = asdict(self.spec)
        described.update(
            model_label=self.model_label,
            normalizer=NORMALIZER_VERSION,
            decoding=self.spec.decoding,
            comparable_with_reference_harness=self.spec.window == "truncate30",
        )
        return described


class Transcriber(Protocol):
    def features(self, audio: np.ndarray) -> np.ndarray:
        """The log-mel input the model hears for one 16 kHz clip (n_mels × frames)."""

    def transcribe(self, clips: Sequence[np.ndarray]) -> list[str]:
        """One transcript per 16 kHz clip; clips of one call are decoded as one batch."""


def window(audio: np.ndarray, policy: str) -> np.ndarray:
    """The part of the clip a grader hears under its window policy."""
    return audio[:WINDOW_SAMPLES] if policy == "truncate30" else audio


@lru_cache(maxsize=64)
def _digest(path: Path, size: int, mtime_ns: int) -> str:
    del size, mtime_ns  # cache key only: a changed file is hashed again
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_label(name: str, files: Sequence[Path]) -> str:
    """`name@sha8` over the model's weight and config files, so new weights mean a new id."""
    digest = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        digest.update(f.name.encode() + _digest(f, st.st_size, st.st_mtime_ns).encode())
    return f"{name}@{digest.hexdigest()[:8]}"


def load_grader(spec: GraderSpec) -> LoadedGrader:
    """Load the backend a spec names (models from local paths or the offline packages)."""
    spec = spec.resolved()
    if spec.backend == "faster-whisper":
        from omni_tasks.grading.whisper_ct2 import FasterWhisperBackend as Impl
    elif spec.backend == "transformers":
        from omni_tasks.grading.whisper_hf import TransformersBackend as Impl  # type: ignore[assignment]
    else:
        from omni_tasks.grading.whisper_openai import OpenAIWhisperBackend as Impl  # type: ignore[assignment]
    backend = Impl(spec)
    return LoadedGrader(spec=spec, model_label=backend.model_label, backend=backend)
