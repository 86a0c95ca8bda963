"""How the simulator answers a multiple-choice question: about audio it listens (the tone's
pitch, the number of beeps); about frames it looks (each frame's colour: which one, how many,
first or last); it picks the choice that matches, and then, at its profile's `wrong_answer`
rate, deterministically per (seed, question), answers another letter, the way a weaker model
would. Requests carry their media inline, as upstream's bench sends it (Daily-Omni's audio,
Video-MME's JPEG frames). A request with audio is listened to, all its WAV parts in order
(MiniCPM-o's Daily-Omni sends a frame and its second of audio, in turn); one without is
looked at."""

from __future__ import annotations

import base64
import io
import re

import numpy as np

from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.audio import AudioUnavailable, decode_wav
from omni_tasks.synthesis.profiles import Profile, uniform
from omni_tasks.synthesis.protocol import message_parts, part_text, part_url
from omni_tasks.synthesis.simulator import UnreadableRequest

_CHOICE = re.compile(r"^\s*([A-D])[.)]\s*(.+?)\s*$", re.MULTILINE)
_MARKERS = ("Choices:", "Options:")  # Daily-Omni's prompt, Video-MME's
MAX_INLINE_AUDIO = 16 * 1024 * 1024
MAX_FRAMES = 128
MAX_INLINE_FRAME = 2 * 1024 * 1024
PALETTE = {  # the colours a frame is named by (the Video-MME demo set's)
    "red": (220, 30, 30),
    "green": (30, 180, 60),
    "blue": (30, 60, 220),
    "yellow": (230, 220, 40),
    "white": (240, 240, 240),
    "black": (15, 15, 15),
}


def is_choice_request(body: JsonObject) -> bool:
    """A text-only request whose user message asks to pick among choices."""
    text = user_text(body)
    return body.get("modalities") == ["text"] and any(m in text for m in _MARKERS)


def answer(body: JsonObject, profile: Profile, seed: int) -> str:
    text = user_text(body)
    marker = next(m for m in _MARKERS if m in text)
    question, listed = text.split(marker, 1)
    choices = dict(_CHOICE.findall(listed))
    if len(choices) < 2:
        raise UnreadableRequest(f"no lettered choices after {marker!r}")
    if any(part_url(p, "audio_url") for _, parts in message_parts(body) for p in parts):
        samples, rate = _audio(body)
        heard = _best(choices, samples, rate, text)
    else:
        frames = _frames(body)
        if not frames:
            raise UnreadableRequest("no inline WAV audio_url or JPEG frame in the request")
        heard = _seen(choices, frames, question)
    if uniform(seed, text, "wrong_answer") < profile.wrong_answer:
        others = [x for x in sorted(choices) if x != heard]
        return others[int(uniform(seed, text, "which") * len(others))]
    return heard


def user_text(body: JsonObject) -> str:
    for role, parts in message_parts(body):
        if role == "user":
            return "".join(part_text(p) for p in parts)
    return ""


def _audio(body: JsonObject) -> tuple[np.ndarray, int]:
    """The request's inline WAV parts joined in order (one rate)."""
    wavs = inline_wavs(body)
    try:
        pieces = [decode_wav(w, "inline audio") for w in wavs]
    except (ValueError, AudioUnavailable) as exc:
        raise UnreadableRequest(f"unreadable audio: {exc}") from None
    if len({rate for _, rate in pieces}) != 1:
        raise UnreadableRequest("inline audio parts at more than one rate")
    return np.concatenate([samples for samples, _ in pieces]), pieces[0][1]


def _best(choices: dict[str, str], samples: np.ndarray, rate: int, question: str) -> str:
    """The choice whose number is closest to what the audio holds: beeps when asked how many,
    else the dominant pitch in Hz."""
    counting = "how many" in question.lower()
    measured = _beep_count(samples, rate) if counting else _pitch(samples, rate)

    def distance(label: str) -> float:
        number = re.search(r"\d+(?:\.\d+)?", label)
        return abs(float(number.group()) - measured) if number else float("inf")

    return min(sorted(choices), key=lambda k: distance(choices[k]))


def _seen(choices: dict[str, str], colours: list[str], question: str) -> str:
    """The choice naming what the frames show: how many colours, the first or last colour,
    else the colour most frames have."""
    q = question.lower()
    if "how many" in q:
        runs = [c for i, c in enumerate(colours) if i == 0 or c != colours[i - 1]]
        wanted = str(len(set(runs)))
    elif "first" in q:
        wanted = colours[0]
    elif "last" in q:
        wanted = colours[-1]
    else:
        wanted = max(sorted(set(colours)), key=colours.count)
    for letter in sorted(choices):
        if re.search(rf"\b{re.escape(wanted)}\b", choices[letter].lower()):
            return letter
    return sorted(choices)[0]


def _frames(body: JsonObject) -> list[str]:
    """Each inline JPEG frame's colour name (the palette's nearest to its mean)."""
    from PIL import Image, UnidentifiedImageError

    names, refs = list(PALETTE), np.array(list(PALETTE.values()), dtype=float)
    seen: list[str] = []
    for part in (p for _, parts in message_parts(body) for p in parts):
        url = part_url(part, "image_url")
        if not url:
            continue
        if not url.startswith("data:image/jpeg;base64,") or len(url) > MAX_INLINE_FRAME:
            raise UnreadableRequest("a frame is not an inline JPEG of at most 2 MB")
        if len(seen) == MAX_FRAMES:
            raise UnreadableRequest(f"more than {MAX_FRAMES} frames")
        try:
            with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as img:
                mean = np.asarray(img.convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0)
        except (ValueError, OSError, UnidentifiedImageError) as exc:
            raise UnreadableRequest(f"unreadable frame: {exc}") from None
        seen.append(names[int(np.argmin(((refs - mean) ** 2).sum(axis=1)))])
    return seen


def _pitch(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


def _beep_count(samples: np.ndarray, rate: int) -> float:
    frame = max(rate // 100, 1)
    n = len(samples) // frame
    loud = np.abs(samples[: n * frame]).reshape(n, frame).max(axis=1) > 0.05
    return float(np.count_nonzero(loud[1:] & ~loud[:-1]) + int(loud[0]) if n else 0)


def inline_wavs(body: JsonObject) -> list[bytes]:
    """Every inline WAV `audio_url` of the request, in order (at most MAX_INLINE_AUDIO of
    base64 in all)."""
    out, size = [], 0
    for part in (p for _, parts in message_parts(body) for p in parts):
        url = part_url(part, "audio_url")
        if url.startswith("data:audio/wav;base64,"):
            data = url.split(",", 1)[1]
            size += len(data)
            if size > MAX_INLINE_AUDIO:
                raise UnreadableRequest("inline audio too large")
            try:
                out.append(base64.b64decode(data, validate=True))
            except ValueError as exc:
                raise UnreadableRequest(f"inline audio: {exc}") from None
    if not out:
        raise UnreadableRequest("no inline WAV audio_url in the request")
    return out
