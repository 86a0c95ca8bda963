"""How the simulator answers a multiple-choice question about audio: it listens (the tone's
pitch, the number of beeps), picks the choice that matches, and then, at its profile's
`wrong_answer` rate, deterministically per (seed, question), answers another letter, the way
a weaker model would. Requests carry the audio inline, as upstream's bench sends it."""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np

from omni_tasks.audio import AudioUnavailable, decode_wav
from omni_tasks.synthesis.profiles import Profile, uniform

LETTERS = "ABCD"
_CHOICE = re.compile(r"^\s*([A-D])[.)]\s*(.+?)\s*$", re.MULTILINE)
MAX_INLINE_AUDIO = 16 * 1024 * 1024


class NotAChoiceRequest(ValueError):
    pass


def is_choice_request(body: dict[str, Any]) -> bool:
    """A text-only request whose user message asks to pick among choices."""
    return body.get("modalities") == ["text"] and "Choices:" in user_text(body)


def answer(body: dict[str, Any], profile: Profile, seed: int) -> str:
    text = user_text(body)
    choices = dict(_CHOICE.findall(text.split("Choices:", 1)[1]))
    if len(choices) < 2:
        raise NotAChoiceRequest("no lettered choices after 'Choices:'")
    samples, rate = _audio(body)
    heard = _best(choices, samples, rate, text)
    if uniform(seed, text, "wrong_answer") < profile.wrong_answer:
        others = [x for x in sorted(choices) if x != heard]
        return others[int(uniform(seed, text, "which") * len(others))]
    return heard


def user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages", []):
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            return "".join(p.get("text", "") for p in m["content"] if isinstance(p, dict))
    return ""


def _audio(body: dict[str, Any]) -> tuple[np.ndarray, int]:
    try:
        return decode_wav(inline_wav(body), "inline audio")
    except (ValueError, AudioUnavailable) as exc:
        if isinstance(exc, NotAChoiceRequest):
            raise
        raise NotAChoiceRequest(f"unreadable audio: {exc}") from None


def _best(choices: dict[str, str], samples: np.ndarray, rate: int, question: str) -> str:
    """The choice whose number is closest to what the audio holds: beeps when asked how many,
    else the dominant pitch in Hz."""
    counting = "how many" in question.lower()
    measured = _beep_count(samples, rate) if counting else _pitch(samples, rate)

    def distance(label: str) -> float:
        number = re.search(r"\d+(?:\.\d+)?", label)
        return abs(float(number.group()) - measured) if number else float("inf")

    return min(sorted(choices), key=lambda k: distance(choices[k]))


def _pitch(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


def _beep_count(samples: np.ndarray, rate: int) -> float:
    frame = max(rate // 100, 1)
    n = len(samples) // frame
    loud = np.abs(samples[: n * frame]).reshape(n, frame).max(axis=1) > 0.05
    return float(np.count_nonzero(loud[1:] & ~loud[:-1]) + int(loud[0]) if n else 0)


def inline_wav(body: dict[str, Any]) -> bytes:
    for m in body.get("messages", []):
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            url = (part.get("audio_url") or {}).get("url", "") if isinstance(part, dict) else ""
            if url.startswith("data:audio/wav;base64,"):
                data = url.split(",", 1)[1]
                if len(data) > MAX_INLINE_AUDIO:
                    raise NotAChoiceRequest("inline audio too large")
                try:
                    return base64.b64decode(data, validate=True)
                except ValueError as exc:
                    raise NotAChoiceRequest(f"inline audio: {exc}") from None
    raise NotAChoiceRequest("no inline WAV audio_url in the request")
