"""Threshold-independent per-clip flags stored with a grade (DESIGN.md "Statistics")."""

from __future__ import annotations

import functools

from omni_tasks.grading.wer import normalize

DEFAULT_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of "
    "perceiving auditory and visual inputs, as well as generating text and speech.\n"
    "For this request you act as a text-to-speech engine with zero-shot voice cloning: the API "
    "provides reference audio and its transcript (ref_audio, ref_text) and task_type Base. The "
    "user message is the exact text you must speak. Synthesize natural speech in the same "
    "language as that user text, matching the timbre, prosody, and speaking style of the "
    "reference audio while reading the new content clearly."
)

_REQUEST_OPENERS = (
    "please",
    "could you",
    "can you",
    "would you",
    "will you",
    "tell me",
    "let me know",
)


def _trigrams(words: list[str]) -> set[tuple[str, str, str]]:
    return {(words[i], words[i + 1], words[i + 2]) for i in range(len(words) - 2)}


def is_question(reference: str) -> bool:
    """A question or a request: ends with '?' or opens with a request phrase."""
    stripped = reference.strip()
    if stripped.endswith(("?", "？")):
        return True
    opening = " ".join(normalize(stripped).split())
    return any(opening == w or opening.startswith(w + " ") for w in _REQUEST_OPENERS)


def task_leak(reference: str, hypothesis: str, system_prompt: str | None) -> bool:
    """The model spoke its instructions: a word 3-gram of the system prompt that the
    hypothesis contains and the reference does not."""
    if not system_prompt or not hypothesis:
        return False
    heard = _trigrams(normalize(hypothesis).split()) & _prompt_trigrams(system_prompt)
    return bool(heard and heard - _trigrams(normalize(reference).split()))


@functools.lru_cache(maxsize=16)
def _prompt_trigrams(system_prompt: str) -> frozenset[tuple[str, str, str]]:
    """A run's system prompt is the same for every clip: its trigrams once."""
    return frozenset(_trigrams(normalize(system_prompt).split()))
