"""(i) What Whisper hears: upstream's own 16 kHz conversion of the clip's 24 kHz PCM
(`_pcm_s16le_to_f32_16k`, seed_tts_eval.py, run unmodified) and ours (a stored WAV decoded,
then `to_whisper_rate`) give the same samples, bit for bit."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from omni_tasks.evidence.audio import decode_wav, resample, to_whisper_rate
from tests.conformance.upstream import Upstream

EVAL = "vllm_omni.benchmarks.data_modules.seed_tts_eval"


def _pcm(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 24_000)) / 24_000
    tone = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(t.size)
    return np.round(np.clip(tone, -1, 1) * 32767).astype(np.int16)


def _stored(pcm: np.ndarray) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, pcm, 24_000, subtype="PCM_16", format="WAV")
    return buf.getvalue()


@pytest.mark.parametrize("seconds", [0.001, 1.0, 7.3, 41.0])
def test_i_our_16k_audio_is_upstreams(upstream: Upstream, seconds: float) -> None:
    theirs_fn = upstream.load(EVAL, ["_pcm_s16le_to_f32_16k"])["_pcm_s16le_to_f32_16k"]
    pcm = _pcm(seconds, seed=int(seconds * 10))
    theirs = theirs_fn(pcm.tobytes(), 24_000, 1)
    samples, rate = decode_wav(_stored(pcm), "clip")
    ours = to_whisper_rate(samples, rate)
    assert ours.dtype == theirs.dtype == np.float32
    assert np.array_equal(ours, theirs)


def test_i_the_check_can_fail(upstream: Upstream) -> None:
    """Our other resampler (polyphase, used for the stream's 24 kHz) is not upstream's here."""
    theirs_fn = upstream.load(EVAL, ["_pcm_s16le_to_f32_16k"])["_pcm_s16le_to_f32_16k"]
    pcm = _pcm(2.0, seed=1)
    samples, rate = decode_wav(_stored(pcm), "clip")
    polyphase = resample(samples, rate, 16_000)
    theirs = theirs_fn(pcm.tobytes(), 24_000, 1)
    assert polyphase.size == theirs.size and not np.array_equal(polyphase, theirs)
