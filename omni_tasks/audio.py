"""Audio I/O: WAV files under the configured audio root (any fsspec URL) and resampling.

Decoding and resampling stay in Python (soundfile + scipy), so no system ffmpeg is needed.
Clips are stored as the reference harness keeps them: 24 kHz mono 16-bit PCM; Whisper hears
16 kHz float32.
"""

from __future__ import annotations

import io
from math import gcd

import fsspec
import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

STORE_RATE = 24_000
WHISPER_RATE = 16_000


class AudioError(ValueError):
    """A file that is not decodable audio."""


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return samples.astype(np.float32, copy=False)
    g = gcd(rate, target)
    return resample_poly(samples, target // g, rate // g).astype(np.float32)


def decode_wav(data: bytes, where: str = "audio") -> tuple[np.ndarray, int]:
    """Mono float32 samples in [-1, 1] and the sample rate; channels are averaged."""
    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioError(f"{where}: not decodable audio ({exc})") from exc
    return samples.mean(axis=1), int(rate)


def read_audio(uri: str, rate: int = WHISPER_RATE) -> np.ndarray:
    """The clip at `uri` as mono float32 at `rate` (default: what Whisper hears)."""
    with fsspec.open(uri, "rb") as fh:
        data = fh.read()
    samples, native = decode_wav(data, uri)
    return resample(samples, native, rate)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    buf = io.BytesIO()
    pcm = np.clip(samples, -1.0, 1.0) if samples.dtype.kind == "f" else samples
    sf.write(buf, pcm, rate, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def write_audio(uri: str, samples: np.ndarray, rate: int) -> None:
    """Write mono samples as 16-bit PCM WAV at `rate`, creating parent folders."""
    with fsspec.open(uri, "wb", auto_mkdir=True) as fh:
        fh.write(wav_bytes(samples, rate))
