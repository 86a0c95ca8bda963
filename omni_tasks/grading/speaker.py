"""A speaker-embedding **proxy** for voice identity: resemblyzer's GE2E encoder (its weights
ship in its PyPI wheel, pinned by the Makefile; CPU, about 10 ms a clip after a 3 s load).

Used only relatively, as upstream's voice-isolation test reads its embedders: an output is
compared with every reference voice of its batch by cosine similarity; the closest is its
label, and the margin is its own voice's similarity minus the best other's (negative: it sounds
like another reference). Never compared with an absolute SIM threshold: this is not the CAM++
or WavLM model upstream gates on, and its figures are not theirs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from omni_tasks.analysis.concurrency import VoiceLabel
from omni_tasks.evidence.audio import resample

EMBED_RATE = 16_000  # what the encoder reads
PROXY = "resemblyzer 0.1.4 GE2E, a proxy read relatively"


@lru_cache(maxsize=1)
def _encoder() -> Any:
    from resemblyzer import VoiceEncoder

    return VoiceEncoder("cpu", verbose=False)


def embed(samples: np.ndarray, rate: int) -> np.ndarray:
    """The unit-length embedding of one utterance."""
    from resemblyzer import preprocess_wav

    wav = preprocess_wav(resample(samples.astype(np.float32), rate, EMBED_RATE), EMBED_RATE)
    if not len(wav):  # all silence after trimming: the raw samples, as they are
        wav = resample(samples.astype(np.float32), rate, EMBED_RATE)
    return np.asarray(_encoder().embed_utterance(wav), dtype=np.float64)


def label(output: np.ndarray, references: dict[str, np.ndarray], own: str) -> VoiceLabel:
    """Which of the batch's reference voices an output sounds like (argmax of cosine)."""
    sims = {name: float(output @ ref) for name, ref in references.items()}
    closest = max(sims, key=lambda name: sims[name])
    others = [s for name, s in sims.items() if name != own]
    margin = sims[own] - max(others) if others else 1.0
    return VoiceLabel(closest, margin, closest == own)
