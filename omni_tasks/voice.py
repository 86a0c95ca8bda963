"""Real neural speech on CPU: piper with the pinned en_US-joe-medium voice.

Used by the simulator (what a model "says") and for the demo corpus's prompt wavs. Output is
resampled to the 24 kHz the reference harness stores. Piper's sampling noise is switched off,
so the same text and pace always give the same samples (the simulator is deterministic).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from omni_tasks.evidence.audio import STORE_RATE, resample
from omni_tasks.offline_models import piper_voice_files


@lru_cache(maxsize=1)
def _voice() -> Any:
    from piper import PiperVoice

    onnx, config = piper_voice_files()
    return PiperVoice.load(str(onnx), str(config))


def speak(text: str, rate: int = STORE_RATE, length_scale: float | None = None) -> np.ndarray:
    """Mono float32 speech of `text` at `rate` (empty text gives no samples)."""
    if not text.strip():
        return np.zeros(0, dtype=np.float32)
    from piper import SynthesisConfig

    voice = _voice()
    config = SynthesisConfig(length_scale=length_scale, noise_scale=0.0, noise_w_scale=0.0)
    chunks = [c.audio_float_array for c in voice.synthesize(text, syn_config=config)]
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return resample(np.concatenate(chunks), voice.config.sample_rate, rate)
