"""Distinct reference voices from one offline TTS voice, and the simulator's voice cloning.

A voice is the pinned piper voice played at a factor (0.82: lower and slower, 1.22: higher and
faster); a speaker embedder tells these apart with margins of 0.2 to 0.3 (cosine). A seed-TTS
run asked for `voices: k` sends, round-robin as upstream's voice-isolation test does, k
reference prompts (the first k items' prompts, each re-voiced at its factor) instead of each
item's own, so every batch mixes k voices. The simulator clones the voice of a request's
reference by the factor its WAV names (a stand-in for a cloning model's encoder: a reference it
does not know is spoken in the voice itself, as every run before voices was).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from omni_tasks.evidence.audio import STORE_RATE, resample

if TYPE_CHECKING:
    from omni_tasks.dataset import Dataset

# The first is the voice itself; the others sound like other people to a speaker embedder.
FACTORS = (1.0, 0.82, 1.22, 0.9, 1.12)
MAX_VOICES = len(FACTORS)


def revoice(samples: np.ndarray, factor: float, rate: int = STORE_RATE) -> np.ndarray:
    """`samples` played `factor` times faster (pitch and pace together), at `rate`."""
    if factor == 1.0 or not len(samples):
        return samples
    return resample(samples, round(rate * factor), rate)


def voice_mix(ds: Dataset, k: int, root: Path) -> Dataset:
    """The dataset with its items' references replaced, round-robin, by k voices (written under
    `root` once); its fingerprint says so."""
    if not 2 <= k <= MAX_VOICES:
        raise ValueError(f"voices: {k}: from 2 to {MAX_VOICES} (or 1: each item's own prompt)")
    if len(ds.utterances) < k:
        raise ValueError(
            f"voices: {k} needs at least {k} items, the dataset has {len(ds.utterances)}"
        )
    prompts = []
    for i, u in enumerate(ds.utterances[:k]):
        data = u.prompt_wav.read_bytes()
        digest = hashlib.sha256(data).hexdigest()[:12]
        wav = root / f"voice{i}-{FACTORS[i]:g}-{digest}.wav"
        if not wav.is_file():
            samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=False)
            if samples.ndim > 1:
                samples = samples.mean(axis=1)
            voiced = revoice(resample(samples, rate, STORE_RATE), FACTORS[i])
            root.mkdir(parents=True, exist_ok=True)
            tmp = wav.with_suffix(".tmp.wav")
            with sf.SoundFile(tmp, "w", STORE_RATE, 1, format="WAV", subtype="PCM_16") as f:
                f.comment = f"{TAG}{FACTORS[i]:g}"
                f.write(voiced)
            tmp.replace(wav)
        prompts.append((u.prompt_text, wav))
    utterances = tuple(
        dataclasses.replace(u, prompt_text=prompts[i % k][0], prompt_wav=prompts[i % k][1])
        for i, u in enumerate(ds.utterances)
    )
    return dataclasses.replace(ds, utterances=utterances, fingerprint=f"{ds.fingerprint}:voices{k}")


def cloned_factor(ref_audio: bytes | None) -> float:
    """The voice a reference speaks in, as the simulator clones it: the factor its prompt was
    re-voiced at (kept in the WAV's comment by `voice_mix`), else 1.0, the voice itself."""
    if not ref_audio:
        return 1.0
    try:
        with sf.SoundFile(io.BytesIO(ref_audio)) as f:
            comment = f.comment or ""
    except (sf.LibsndfileError, RuntimeError):
        return 1.0
    try:
        factor = float(comment.removeprefix(TAG)) if comment.startswith(TAG) else 1.0
    except ValueError:
        return 1.0
    return factor if factor in FACTORS else 1.0


TAG = "omni-tasks voice "
