"""Speech recognition for grading: one interface, three Whisper backends.

Every backend turns 16 kHz mono clips into transcripts; the seed-tts-eval scorer in
`grading.wer` scores them all. The grader id pins everything that changes a transcript
(backend, model weights, precision, window policy, decoding options, normalizer), so two
gradings with different ids are never silently compared.

Window policies follow the reference harness's version (`HARNESS_WINDOW`): `truncate30` hears
only the first 30 s of a clip, as the harness up to 0.28.0 does (its feature extractor takes one
padded 30 s window); `whole-timestamps` is the 0.30.0 call, clips up to 30 s as before and longer
ones whole, decoded with timestamps (transformers backend only, since it is that library's
long-form algorithm); `longform` hears the whole clip with the backend's own long-form decoding
(for diagnosing runaways; comparable with no harness version).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from omni_tasks.contracts import JsonObject
from omni_tasks.grading.wer import NORMALIZER_VERSION
from omni_tasks.harness import WINDOWS, UnknownHarness, harness_window, harnesses_of

if TYPE_CHECKING:
    import numpy as np

WINDOW_SAMPLES = 30 * 16_000
WINDOW_FRAMES = 3000


@dataclass(frozen=True)
class _Backend:
    """What a backend offers, its defaults first."""

    windows: tuple[str, ...]
    precisions: tuple[str, ...]  # the first is the default
    model: str  # the default model
    # None: the model's generation config decides (the harness passes no limit: large-v3 stops
    # at 448 tokens in all); the CTranslate2 and openai-whisper defaults are their own 224.
    max_new_tokens: int | None


_BACKENDS = {
    "transformers": _Backend(
        ("truncate30", "whole-timestamps"),
        ("fp32", "fp16", "bf16"),
        "openai/whisper-large-v3",
        None,
    ),
    "openai-whisper": _Backend(("truncate30", "longform"), ("fp32", "fp16"), "large-v3", 224),
    "faster-whisper": _Backend(
        ("truncate30", "longform"),
        ("int8", "int8_float32", "float32", "float16", "int8_float16"),
        "tiny.en",
        224,
    ),
}
BACKENDS: tuple[str, ...] = tuple(_BACKENDS)


class GraderConfigError(ValueError):
    """A grader specification that cannot be built."""


@dataclass(frozen=True)
class GraderSpec:
    """What to grade with. Device and batch size change speed, not the grader id."""

    backend: str = "faster-whisper"
    model: str | None = None
    precision: str | None = None
    window: str | None = None  # default: the harness version's policy, else truncate30
    beam_size: int = 1
    max_new_tokens: int | None = None  # default per backend (_Backend.max_new_tokens)
    language: str = "en"
    device: str = "cpu"
    batch_size: int = 8
    harness_version: str | None = None  # the reference harness the grading is meant to match

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> GraderSpec:
        """The spec a config, trigger form or command line gives (None means the default); an
        unknown setting is an error that names it. Every caller builds its spec here."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise GraderConfigError(
                f"unknown grader setting(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return cls(**{k: v for k, v in params.items() if v is not None})

    def resolved(self) -> GraderSpec:
        if self.backend not in BACKENDS:
            raise GraderConfigError(
                f"unknown ASR backend {self.backend!r}; choose one of {BACKENDS}"
            )
        offers, window = _BACKENDS[self.backend], self._window()
        if window not in offers.windows:
            raise GraderConfigError(
                f"window policy {window!r} is not available for {self.backend}; choose one of "
                f"{offers.windows}"
            )
        precision = self.precision or offers.precisions[0]
        if precision not in offers.precisions:
            raise GraderConfigError(
                f"precision {precision!r} is not available for {self.backend}; "
                f"choose one of {offers.precisions}"
            )
        max_new = offers.max_new_tokens if self.max_new_tokens is None else self.max_new_tokens
        if self.beam_size < 1 or self.batch_size < 1 or (max_new is not None and max_new < 1):
            raise GraderConfigError("beam size, batch size and max new tokens must be positive")
        return dataclasses.replace(
            self,
            model=self.model or offers.model,
            precision=precision,
            window=window,
            max_new_tokens=max_new,
        )

    def _window(self) -> str:
        if self.window is not None and self.window not in WINDOWS:
            raise GraderConfigError(
                f"unknown window policy {self.window!r}; choose one of {WINDOWS}"
            )
        try:
            wanted = None if self.harness_version is None else harness_window(self.harness_version)
        except UnknownHarness as exc:
            raise GraderConfigError(str(exc)) from None
        if wanted is None:
            return self.window or "truncate30"
        if self.backend != "transformers":
            # Only the transformers grader follows a harness's window; another backend grading
            # a harness run with its own window is a choice the user states (--window).
            if self.window is None and wanted != "truncate30":
                raise GraderConfigError(
                    f"harness {self.harness_version} grades with window {wanted!r}, which the "
                    f"{self.backend} backend does not follow; use --backend transformers, or "
                    "pass --window to grade with another window on purpose"
                )
            return self.window or "truncate30"
        if self.window not in (None, wanted):
            raise GraderConfigError(
                f"harness {self.harness_version} grades with window {wanted!r}; "
                f"window {self.window!r} would not match it"
            )
        return wanted

    @property
    def decoding(self) -> str:
        search = "greedy" if self.beam_size == 1 else f"beam{self.beam_size}"
        limit = "gen" if self.max_new_tokens is None else str(self.max_new_tokens)
        return f"{search}-t0-max{limit}-{self.language}"

    def grader_id(self, model_label: str, runtime: str | None = None) -> str:
        """`backend[==runtime]/model/precision/window/decoding/normalizer`. The runtime is the
        library version where the decoding path depends on it."""
        backend = self.backend if runtime is None else f"{self.backend}=={runtime}"
        return (
            f"{backend}/{model_label}/{self.precision}/{self.window}/{self.decoding}/"
            f"{NORMALIZER_VERSION}"
        )


@dataclass(frozen=True)
class LoadedGrader:
    """A ready backend and the identity of what it grades with."""

    spec: GraderSpec
    model_label: str
    backend: Transcriber

    @property
    def grader_id(self) -> str:
        return self.spec.grader_id(self.model_label, self.backend.runtime)

    def description(self) -> JsonObject:
        return asdict(self.spec) | {
            "model_label": self.model_label,
            "runtime": self.backend.runtime,
            "normalizer": NORMALIZER_VERSION,
            "decoding": self.spec.decoding,
            "harness_versions_matched": harnesses_of(str(self.spec.window)),
        }


class Transcriber(Protocol):
    runtime: str | None  # library version recorded in the grader id, where decoding depends on it

    def features(self, audio: np.ndarray) -> np.ndarray:
        """The log-mel input the model hears for one 16 kHz clip (n_mels × frames)."""

    def transcribe(self, clips: Sequence[np.ndarray]) -> list[str]:
        """One transcript per 16 kHz clip; clips of one call are decoded as one batch."""


def window(audio: np.ndarray, policy: str | None) -> np.ndarray:
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
