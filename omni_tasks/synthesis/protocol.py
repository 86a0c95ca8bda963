"""The vLLM-Omni seed-TTS wire protocol (REFERENCE.md §1), shared by the client and the
simulator: the request body, prompt templates, and the SSE chunks of the response."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from omni_tasks.grading.flags import DEFAULT_SYSTEM_PROMPT

DEFAULT_MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
# Effective per-stage sampling of the nightly (thinker greedy; talker as its deploy yaml).
STAGE_SAMPLING: tuple[dict[str, Any], ...] = (
    {"temperature": 0.0, "top_k": 1},
    {"temperature": 0.9, "top_k": 50},
    {},
)


@dataclass(frozen=True)
class PromptTemplate:
    """How the target text is put to the model: a run dimension (the prompt fingerprint)."""

    name: str
    system_prompt: str | None
    user_format: str = "{text}"

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(
            json.dumps([self.system_prompt, self.user_format]).encode()
        ).hexdigest()


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("seed-tts-default", DEFAULT_SYSTEM_PROMPT),
        # What another serving stack uses on the same clips (REFERENCE.md §2): no system prompt.
        PromptTemplate(
            "read-aloud", None, "Please read the following text out loud in English: {text}"
        ),
    )
}


def prompt_template(name: str) -> PromptTemplate:
    if name not in PROMPT_TEMPLATES:
        known = sorted(PROMPT_TEMPLATES)
        raise ValueError(f"unknown prompt template {name!r}; choose one of {known}")
    return PROMPT_TEMPLATES[name]


def request_body(
    text: str,
    template: PromptTemplate,
    *,
    model: str = DEFAULT_MODEL,
    seed: int | None = None,
    ref_audio_wav: bytes | None = None,
    ref_text: str | None = None,
) -> dict[str, Any]:
    """The exact chat-completions body of the reference harness, plus the run seed for every
    stage through `sampling_params_list` (the top-level fields only reach stage 0)."""
    messages: list[dict[str, Any]] = []
    if template.system_prompt is not None:
        messages.append(
            {"role": "system", "content": [{"type": "text", "text": template.system_prompt}]}
        )
    user = template.user_format.format(text=text)
    messages.append({"role": "user", "content": [{"type": "text", "text": user}]})
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "temperature": 0.0,
        "max_tokens": 2048,
        "modalities": ["text", "audio"],
        "messages": messages,
        "task_type": "Base",
        "language": "English",
        "max_new_tokens": 2048,
    }
    if ref_audio_wav is not None:
        body["ref_audio"] = "data:audio/wav;base64," + base64.b64encode(ref_audio_wav).decode()
    if ref_text is not None:
        body["ref_text"] = ref_text
    if seed is not None:
        body["seed"] = seed
        body["sampling_params_list"] = [{**s, "seed": seed} for s in STAGE_SAMPLING]
    return body


def target_text(body: dict[str, Any]) -> str:
    """The user text of a request (what the model must say)."""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def system_prompt_of(body: dict[str, Any]) -> str | None:
    for message in body.get("messages", []):
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


def seed_of(body: dict[str, Any]) -> int:
    stages = body.get("sampling_params_list") or []
    for stage in stages[1:]:  # the talker's seed decides what the audio says
        if isinstance(stage, dict) and "seed" in stage:
            return int(stage["seed"])
    return int(body.get("seed", 42))  # the deploy yaml's seed when none is sent


def sse(chunk: dict[str, Any] | str) -> bytes:
    data = chunk if isinstance(chunk, str) else json.dumps(chunk)
    return f"data: {data}\n\n".encode()


def text_chunk(content: str, model: str) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "model": model, "modality": "text",
            "choices": [{"index": 0, "delta": {"content": content}}]}  # fmt: skip


def audio_chunk(wav: bytes, model: str) -> dict[str, Any]:
    content = base64.b64encode(wav).decode()
    return {"object": "chat.completion.chunk", "model": model, "modality": "audio",
            "choices": [{"index": 0, "delta": {"content": content}}]}  # fmt: skip


# Transcript mode (simulator only): what would have been heard, without audio, in chunks that
# carry their audio duration so the client's audio cap still applies.
SECONDS_PER_WORD = 0.4


def transcript_chunk(words: str, seconds: float, model: str) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "model": model, "modality": "transcript",
            "simulated": True, "audio_seconds": seconds,
            "choices": [{"index": 0, "delta": {"content": words}}]}  # fmt: skip
