"""MiniCPM-o's Daily-Omni packing (`--daily-omni-pack-mode minicpm-interleave`, vllm-omni
#5606 / #5625): the video at one frame a second, each frame an inline JPEG `image_url`
followed by that second of the audio as an inline 16 kHz WAV `audio_url`, cut as upstream's
`_extract_minicpm_frame_audio_segments` (its port of MiniCPM-o's
`get_video_frame_audio_segments`) cuts them: frames by index in presentation order, a video
longer than 64 s sampled on a 0.1 s grid, the audio read as vLLM's `load_audio` reads a WAV
(float32, channels averaged, PyAV-resampled to 16 kHz), the last segment padded to 0.1 s.
The conformance suite checks every part against upstream's own code."""

from __future__ import annotations

import io
import math
import wave
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from omni_tasks.benchmarks.multiple_choice.family import data_url
from omni_tasks.benchmarks.multiple_choice.videomme import jpeg_bytes, uniform_indices

if TYPE_CHECKING:
    import numpy as np

MAX_FRAMES = 64  # _MINICPM_MAX_NUM_FRAMES (upstream's MAX_NUM_FRAMES unset)
AUDIO_RATE = 16_000  # _MINICPM_AUDIO_SR
MIN_SEGMENT = 1600  # samples: a shorter last (or empty) segment is padded to 0.1 s
MIN_RESAMPLE = 1024  # vLLM pads shorter input so libswresample emits a frame


def parts(video: Path, audio: Path) -> list[JsonValue]:
    """The request's media parts: frame, its second of audio, frame, ... (inline)."""
    frames, segments = frames_and_segments(video, audio)
    out: list[JsonValue] = []
    for jpeg, segment in zip(frames, segments, strict=True):
        out.append({"type": "image_url", "image_url": {"url": data_url("image/jpeg", jpeg)}})
        wav = data_url("audio/wav", wav16(segment))
        out.append({"type": "audio_url", "audio_url": {"url": wav}})
    return out


def frames_and_segments(video: Path, audio: Path) -> tuple[list[bytes], list[np.ndarray]]:
    """Each sampled frame (JPEG) and the audio from its time to the next frame's."""
    import numpy as np

    n, fps = _probe(video)
    duration = n / fps
    if duration > MAX_FRAMES:  # the picks of a 0.1 s grid
        times = [round(i * 0.1, 1) for i in uniform_indices(int(duration / 0.1), MAX_FRAMES)]
    else:
        times = [float(i) for i in range(max(1, math.ceil(duration)))]
    index = [min(int(t * fps), n - 1) for t in times]
    samples = read_audio(audio)
    segments = []
    for i, start in enumerate(times):
        end = times[i + 1] if i < len(times) - 1 else duration
        segment = samples[int(start * AUDIO_RATE) : int(end * AUDIO_RATE)]
        if i == len(times) - 1 and len(segment) < MIN_SEGMENT:
            pad = np.zeros(MIN_SEGMENT - len(segment), dtype=segment.dtype)
            segment = np.concatenate([segment, pad])
        segments.append(segment if len(segment) else np.zeros(MIN_SEGMENT, dtype=np.float32))
    return _frames(video, index), segments


def _probe(video: Path) -> tuple[int, float]:
    """The frame count and average rate (upstream's `_probe_video_frames_and_fps`): the
    stream's count, else its duration × rate, else every frame decoded."""
    import av

    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate) if stream.average_rate else 0.0
        n = stream.frames or 0
        if n <= 0:
            duration: float | None = None
            if stream.duration is not None and stream.time_base is not None:
                duration = float(stream.duration * stream.time_base)
            elif container.duration is not None:
                duration = container.duration / av.time_base
            if duration and fps:
                n = math.floor(duration * fps)
        if n <= 0:
            stream.thread_type = "AUTO"
            n = sum(1 for _ in container.decode(stream))
    if n <= 0:
        raise ValueError(f"no decodable video frames in {video}")
    return n, fps or 1.0


def _frames(video: Path, index: list[int]) -> list[bytes]:
    """A JPEG of the frame at each index, decoded in one forward pass (an index past the
    stream's end repeats its last frame)."""
    import av

    wanted = sorted(set(index))
    decoded: dict[int, Any] = {}
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        cursor = 0
        for position, frame in enumerate(container.decode(stream)):
            if wanted[cursor] > position:
                continue
            image = frame.to_image()
            while cursor < len(wanted) and wanted[cursor] <= position:
                decoded[wanted[cursor]] = image
                cursor += 1
            if cursor >= len(wanted):
                break
    if not decoded:
        raise ValueError(f"decoded no frames from {video}")
    last = decoded[max(decoded)]
    return [jpeg_bytes(decoded.get(i, last)) for i in index]


def read_audio(path: Path) -> np.ndarray:
    """A WAV as vLLM's soundfile loader reads it for `sr=16000, mono=True`."""
    import numpy as np
    import soundfile as sf

    with sf.SoundFile(str(path)) as f:
        rate = f.samplerate
        samples = f.read(dtype="float32", always_2d=False).T
    if samples.ndim > 1:
        samples = np.mean(samples, axis=tuple(range(samples.ndim - 1)))
    return samples if rate == AUDIO_RATE else _resample(samples, rate)


def _resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """vLLM's `resample_audio_pyav` (libswresample), mono."""
    import av
    import numpy as np

    expected = math.ceil(samples.shape[-1] * AUDIO_RATE / rate)
    pcm = np.asarray(samples, dtype=np.float32)
    if len(pcm) < MIN_RESAMPLE:
        pcm = np.pad(pcm, (0, MIN_RESAMPLE - len(pcm)))
    resampler = av.AudioResampler(format="fltp", layout="mono", rate=AUDIO_RATE)
    frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="fltp", layout="mono")
    frame.sample_rate = rate
    out = resampler.resample(frame)
    out.extend(resampler.resample(None))
    return np.concatenate([f.to_ndarray() for f in out], axis=1).squeeze(0)[:expected]


def wav16(samples: np.ndarray) -> bytes:
    """Mono 16-bit WAV at 16 kHz as upstream writes a segment (`_numpy_to_wav_bytes`:
    clipped to ±1, scaled by 32767, truncated)."""
    import numpy as np

    pcm = np.asarray(samples).reshape(-1)
    if pcm.dtype != np.int16:
        pcm = (np.clip(pcm.astype(np.float64), -1.0, 1.0) * 32767.0).astype(np.int16)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(AUDIO_RATE)
        out.writeframes(pcm.tobytes())
    return buf.getvalue()
