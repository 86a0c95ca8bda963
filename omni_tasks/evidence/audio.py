"""Audio I/O: WAV files under the configured audio root (any fsspec URL) and resampling.

Decoding and resampling stay in Python (soundfile + scipy), so no system ffmpeg is needed.
Clips are stored as the reference harness keeps them: 24 kHz mono 16-bit PCM; Whisper hears
16 kHz float32.
"""

from __future__ import annotations

import io
import os
import stat
from math import gcd
from urllib.parse import unquote, urlsplit

import fsspec
import numpy as np
import soundfile as sf

from omni_tasks.config import get_settings

STORE_RATE = 24_000
WHISPER_RATE = 16_000
# A clip is capped at 60 s of 24 kHz 16-bit audio (2.9 MB); long-form grading may see a few
# minutes. Anything far larger is not a clip.
MAX_AUDIO_BYTES = 64 * 1024 * 1024


class AudioError(ValueError):
    """A file that is not decodable audio."""


class AudioUnavailable(AudioError):
    """Audio that may not or cannot be read: outside its root, not a regular file, too big."""


def audio_roots() -> list[str]:
    return [get_settings().audio_root_url]


def check_audio_uri(uri: str, roots: list[str] | None = None) -> str:
    """The one rule for audio locations that come from data (artifacts, stored rows), whatever
    the root's kind: a regular file strictly inside an audio root. Plain paths and `file://`
    URLs are resolved (symlinks followed) and must not be the root itself, a directory, a FIFO
    or a device; other URLs are percent-decoded and refused with a '.' or '..' segment, a
    query or a fragment before the prefix check. Returns `uri`; raises AudioUnavailable with
    the reason."""
    roots = audio_roots() if roots is None else roots
    if "\x00" in uri or not uri:
        raise AudioUnavailable("empty or NUL in the path")
    local = _local_path(uri)
    if local is not None:
        real = os.path.realpath(local)
        bases = [os.path.realpath(b) for r in roots if (b := _local_path(r)) is not None]
        if not any(real.startswith(b.rstrip(os.sep) + os.sep) for b in bases):
            raise AudioUnavailable("path outside the audio root")
        try:
            mode = os.stat(real).st_mode
        except OSError:
            return uri  # not there (yet): reading it later says so
        if not stat.S_ISREG(mode):
            raise AudioUnavailable("not a regular file")
        return uri
    if not any(_url_under(uri, r) for r in roots if _local_path(r) is None):
        raise AudioUnavailable("URL outside the audio root")
    return uri


def _local_path(uri: str) -> str | None:
    """The local path a plain path or `file://` URL names; None for any other URL."""
    if uri.startswith("file://"):
        parts = urlsplit(uri)
        return unquote(parts.path) if parts.netloc in ("", "localhost") else None
    return None if "://" in uri else uri


def _url_under(uri: str, root: str) -> bool:
    u, r = urlsplit(uri), urlsplit(root)
    if (u.scheme.lower(), u.netloc.lower()) != (r.scheme.lower(), r.netloc.lower()):
        return False
    if u.query or u.fragment or "\\" in u.path:
        return False
    path, base = unquote(u.path), unquote(r.path).rstrip("/")
    if any(seg in (".", "..") for seg in path.split("/")) or "\x00" in path:
        return False
    return path.startswith(base + "/") and len(path) > len(base) + 1


def load_audio_bytes(uri: str, roots: list[str] | None = None) -> bytes:
    """The bytes of the clip at `uri`, after `check_audio_uri`, at most MAX_AUDIO_BYTES."""
    check_audio_uri(uri, roots)
    local = _local_path(uri)
    data = _read_local(local) if local is not None else _read_url(uri)
    if len(data) > MAX_AUDIO_BYTES:  # grew since its size was read
        raise AudioUnavailable(f"larger than {MAX_AUDIO_BYTES} bytes")
    return data


def _read_url(uri: str) -> bytes:
    try:
        fs, path = fsspec.core.url_to_fs(uri)
        if fs.size(path) > MAX_AUDIO_BYTES:
            raise AudioUnavailable(f"larger than {MAX_AUDIO_BYTES} bytes")
        with fs.open(path, "rb") as fh:
            data: bytes = fh.read(MAX_AUDIO_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise AudioUnavailable(f"cannot read: {type(exc).__name__}") from exc
    return data


def _read_local(path: str) -> bytes:
    try:
        # Non-blocking so a FIFO cannot hang the reader; fstat on the open descriptor, so what
        # was checked is what is read.
        fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise AudioUnavailable(f"cannot open: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AudioUnavailable("not a regular file")
        if info.st_size > MAX_AUDIO_BYTES:
            raise AudioUnavailable(f"larger than {MAX_AUDIO_BYTES} bytes")
        return fh.read(MAX_AUDIO_BYTES + 1)


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return samples.astype(np.float32, copy=False)
    # scipy.signal takes most of a second to import: only what resamples pays for it (the
    # benchmark registry, which the DAGs' trigger forms list, imports this module).
    from scipy.signal import resample_poly

    g = gcd(rate, target)
    return resample_poly(samples, target // g, rate // g).astype(np.float32)


# What a speech clip's header may declare; anything else is refused before decoding (a chunk
# declaring 2,147,483,647 Hz would otherwise ask the resampler for hundreds of GiB).
RATES = (8_000, 384_000)
MAX_CHANNELS = 8
MAX_SECONDS = 3_600
WAV_SUBTYPES = frozenset({"PCM_U8", "PCM_S8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"})


def decode_wav(data: bytes, where: str = "audio") -> tuple[np.ndarray, int]:
    """Mono float32 samples in [-1, 1] and the sample rate; channels are averaged. Only WAV
    (RIFF/WAVE, PCM or float) is decoded, and only after its header is checked: a compressed
    format could ask for gigabytes from a small file, a WAV cannot hold more samples than bytes."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioError(f"{where}: not a WAV file (RIFF/WAVE header missing)")
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            rate, channels, frames = int(f.samplerate), int(f.channels), int(f.frames)
            if f.format != "WAV" or f.subtype not in WAV_SUBTYPES:
                raise AudioError(f"{where}: {f.format}/{f.subtype} is not PCM or float WAV")
            if not RATES[0] <= rate <= RATES[1]:
                raise AudioError(f"{where}: sample rate {rate} Hz outside {RATES[0]}–{RATES[1]}")
            if not 1 <= channels <= MAX_CHANNELS:
                raise AudioError(f"{where}: {channels} channels (at most {MAX_CHANNELS})")
            if frames > MAX_SECONDS * rate or frames * channels > len(data):
                raise AudioError(f"{where}: declares {frames} frames × {channels} channels")
            samples = f.read(dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioError(f"{where}: not decodable audio ({exc})") from exc
    return samples.mean(axis=1), rate


def read_audio(uri: str) -> np.ndarray:
    """The clip at `uri` (under the audio root) as Whisper hears it: mono float32 at 16 kHz."""
    samples, native = decode_wav(load_audio_bytes(uri), uri)
    return to_whisper_rate(samples, native)


def to_whisper_rate(samples: np.ndarray, rate: int) -> np.ndarray:
    """16 kHz the way the reference harness resamples before Whisper (seed_tts_eval.py,
    `_audio_path_to_f32_16k`): one FFT resample to int(n × 16000 / rate) samples. Not our
    polyphase `resample`: the two differ by about 50 dB SNR, most at a clip's start."""
    if rate == WHISPER_RATE:
        return samples.astype(np.float32, copy=False)
    from scipy.signal import resample as fft_resample

    return fft_resample(samples, max(1, int(len(samples) * WHISPER_RATE / rate))).astype(np.float32)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    buf = io.BytesIO()
    pcm = np.clip(samples, -1.0, 1.0) if samples.dtype.kind == "f" else samples
    sf.write(buf, pcm, rate, subtype="PCM_16", format="WAV")
    return buf.getvalue()


OPUS_RATE = 48_000  # Opus encodes at 48 kHz (it resamples anything else itself)
OPUS_BITRATE = 24_000  # speech at 24 kb/s: a 10 s clip is ~30 KB, a tenth of its 16-bit WAV


def opus_bytes(data: bytes, where: str = "audio") -> bytes:
    """A WAV clip as Ogg Opus (PyAV's bundled libopus), for a page that embeds many clips:
    speech stays intelligible at a tenth of the size. The WAV is checked as every read is."""
    import av

    samples, rate = decode_wav(data, where)
    buf = io.BytesIO()
    with av.open(buf, "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=OPUS_RATE)
        stream.bit_rate = OPUS_BITRATE
        stream.layout = "mono"
        resampled = resample(samples, rate, OPUS_RATE).astype(np.float32)
        frame = av.AudioFrame.from_ndarray(resampled.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = OPUS_RATE
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


def write_audio(uri: str, samples: np.ndarray, rate: int) -> None:
    """Write mono samples as 16-bit PCM WAV at `rate`, creating parent folders."""
    with fsspec.open(uri, "wb", auto_mkdir=True) as fh:
        fh.write(wav_bytes(samples, rate))
