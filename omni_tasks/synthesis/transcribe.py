"""How the simulator answers a transcription request (speech in, text out): it "hears" what the
WAV says — the demo LibriSpeech set carries it in the file's INFO comment — and, at its
profile's `wrong_answer` rate (deterministically per seed and utterance), keeps only the first
third of the words, the way a model that stops early would. Audio without a comment is silence
to it: an empty transcript."""

from __future__ import annotations

import io

import soundfile as sf

from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.audio import AudioUnavailable, decode_wav
from omni_tasks.synthesis.choices import inline_wavs, user_text
from omni_tasks.synthesis.profiles import Profile, uniform
from omni_tasks.synthesis.simulator import UnreadableRequest


def is_transcription_request(body: JsonObject) -> bool:
    return body.get("modalities") == ["text"] and user_text(body).startswith("Transcribe")


def answer(body: JsonObject, profile: Profile, seed: int) -> str:
    wav = inline_wavs(body)[0]
    try:
        decode_wav(wav, "inline audio")  # a WAV with a sane header, or refused
        heard = sf.SoundFile(io.BytesIO(wav)).comment or ""
    except (ValueError, AudioUnavailable, RuntimeError) as exc:
        raise UnreadableRequest(f"unreadable audio: {exc}") from None
    words = heard.split()
    if words and uniform(seed, heard, "wrong_answer") < profile.wrong_answer:
        words = words[: len(words) // 3]
    return " ".join(words)
