"""seed-tts-eval datasets: a locale directory with `meta.lst` and `prompt-wavs/`.

Rows are `utt_id|prompt_transcript|prompt_wav|target_text[|ground_truth_wav]`. Every row is
validated up front (field count, unique ids, the prompt wav exists and decodes): a bad row is
an error naming the file and line, before any GPU time is spent.

The demo corpus (100 English sentences written for this project, about a third questions or
requests) ships as `omni_tasks/datasets/demo/meta.lst`; its prompt wavs are spoken by piper on
first use into `$OMNI_CACHE_DIR/datasets/demo/` (no audio is committed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from omni_tasks.config import get_settings
from omni_tasks.evidence.audio import STORE_RATE, write_audio
from omni_tasks.trust.names import InvalidName, check_text
from omni_tasks.voice import speak

DEMO_META = Path(__file__).parent / "datasets" / "demo" / "meta.lst"


class DatasetError(ValueError):
    """A dataset that cannot be used as it is; the message names file and line."""


@dataclass(frozen=True)
class Utterance:
    utt_id: str
    prompt_text: str
    prompt_wav: Path
    target_text: str
    line: int


@dataclass(frozen=True)
class Dataset:
    name: str
    meta: Path
    utterances: tuple[Utterance, ...]
    fingerprint: str  # rows + prompt audio: two runs share prompts iff fingerprints match
    skipped: int = 0  # rows upstream's loader skips too ('#' comments, empty targets)

    @property
    def lang(self) -> str:
        """How it is scored: a `zh…` locale directory per character, anything else as English."""
        return "zh" if self.name.lower().startswith("zh") else "en"

    def limit(self, n: int | None) -> tuple[Utterance, ...]:
        return self.utterances if n is None else self.utterances[:n]


def _fail(meta: Path, line: int, message: str) -> DatasetError:
    return DatasetError(f"{meta}:{line}: {message}")


def load_dataset(source: str | Path) -> Dataset:
    """Load and validate a locale directory (or its meta.lst); `demo` is the shipped corpus."""
    if str(source) == "demo":
        return load_dataset(ensure_demo())
    path = Path(source)
    meta = path / "meta.lst" if path.is_dir() else path
    if not meta.is_file():
        raise DatasetError(f"{meta}: no such dataset file (expected a locale dir with meta.lst)")
    try:
        lines = meta.read_text(encoding="utf-8-sig").splitlines()  # a leading BOM is dropped
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{meta}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    utterances: list[Utterance] = []
    seen: dict[str, int] = {}
    digest = hashlib.sha256()
    audio_digests: dict[Path, str] = {}
    root = meta.parent.resolve()
    skipped = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if raw.strip().startswith("#"):  # upstream's loader skips comment lines
            skipped += 1
            continue
        try:
            check_text(raw, "line")
        except InvalidName as exc:
            raise _fail(meta, number, str(exc)) from None
        fields = raw.split("|")
        if len(fields) not in (4, 5):
            raise _fail(meta, number, f"expected 4 or 5 '|'-separated fields, got {len(fields)}")
        if len(fields) == 5 and not fields[4].strip().lower().endswith(".wav"):
            raise _fail(
                meta,
                number,
                "the 5th field is not a .wav path: is there a '|' in the target "
                "text? (the format has no escape for it)",
            )
        utt_id, prompt_text, prompt_rel, target = (f.strip() for f in fields[:4])
        if not target:  # upstream's loader skips rows without a target: so do we, counted
            skipped += 1
            continue
        if not utt_id:
            raise _fail(meta, number, "utterance id must not be empty")
        if utt_id in seen:
            raise _fail(
                meta, number, f"duplicate utterance id {utt_id!r} (first on line {seen[utt_id]})"
            )
        seen[utt_id] = number
        wav = (meta.parent / prompt_rel).resolve()
        if not wav.is_relative_to(root):
            raise _fail(
                meta, number, f"prompt wav {prompt_rel!r} lies outside the dataset directory"
            )
        if wav not in audio_digests:
            audio_digests[wav] = _check_wav(meta, number, wav)
        digest.update(f"{utt_id}|{prompt_text}|{audio_digests[wav]}|{target}\n".encode())
        utterances.append(Utterance(utt_id, prompt_text, wav, target, number))
    if not utterances:
        raise DatasetError(f"{meta}: no utterances")
    name = meta.parent.name if meta.name == "meta.lst" else meta.stem
    return Dataset(name, meta, tuple(utterances), digest.hexdigest(), skipped)


def _check_wav(meta: Path, line: int, wav: Path) -> str:
    if not wav.is_file():
        raise _fail(meta, line, f"prompt wav {wav} does not exist")
    data = wav.read_bytes()
    try:
        info = sf.info(wav)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise _fail(meta, line, f"prompt wav {wav} does not decode ({exc})") from exc
    if info.frames == 0:
        raise _fail(meta, line, f"prompt wav {wav} is empty")
    return hashlib.sha256(data).hexdigest()


def ensure_demo() -> Path:
    """The demo corpus in the cache dir, its prompt wavs spoken by piper on first use."""
    root = get_settings().cache_dir / "datasets" / "demo"
    meta = root / "meta.lst"
    if not meta.is_file() or meta.read_bytes() != DEMO_META.read_bytes():
        root.mkdir(parents=True, exist_ok=True)
        tmp_meta = meta.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(DEMO_META, tmp_meta)
        tmp_meta.replace(meta)
    for raw in meta.read_text(encoding="utf-8").splitlines():
        _, prompt_text, rel, _ = raw.split("|")
        wav = root / rel
        if not wav.is_file():
            tmp = wav.with_suffix(f".{os.getpid()}.tmp.wav")
            write_audio(str(tmp), speak(prompt_text), STORE_RATE)
            tmp.replace(wav)  # atomic: a crash never leaves a half-written prompt
    return root
