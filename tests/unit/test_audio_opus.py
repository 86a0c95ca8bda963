"""The report's clips travel as Ogg Opus: the same duration at a tenth of the WAV's size, and
a file that is not a WAV is refused as every audio read refuses it."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest

from omni_tasks.evidence.audio import AudioError, opus_bytes, wav_bytes


def test_a_clip_keeps_its_duration_at_a_tenth_of_the_size() -> None:
    rate = 24_000
    t = np.arange(rate * 6) / rate
    speechy = (0.3 * np.sin(2 * np.pi * 180 * t) * np.sin(2 * np.pi * 4 * t)).astype(np.float32)
    wav = wav_bytes(speechy, rate)
    ogg = opus_bytes(wav)
    assert len(ogg) * 8 < len(wav)
    with av.open(io.BytesIO(ogg)) as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == "opus"
        samples = sum(frame.samples for frame in container.decode(stream))
    assert samples / 48_000 == pytest.approx(6.0, abs=0.05)


def test_a_file_that_is_not_a_wav_is_refused() -> None:
    with pytest.raises(AudioError, match="not a WAV"):
        opus_bytes(b"OggS" + b"\0" * 100, "clip.wav")
