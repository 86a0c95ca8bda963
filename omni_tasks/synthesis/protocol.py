"""The vLLM-Omni seed-TTS wire protocol (REFERENCE.md §1), shared by the client and the
simulator: the request body, prompt templates, and the SSE chunks of the response."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from omni_tasks.contracts import JsonObject, json_objects
from omni_tasks.grading.flags import DEFAULT_SYSTEM_PROMPT
from omni_tasks.prompts import PLAIN_USER_FORMAT, prompt_fingerprint
from omni_tasks.series import DEFAULT_MODEL
from omni_tasks.synthesis.stages import StageDefaults


@dataclass(frozen=True)
class PromptTemplate:
    """How the target text is put to the model: a run dimension (the prompt fingerprint)."""

    name: str
    system_prompt: str | None
    user_format: str = PLAIN_USER_FORMAT

    @property
    def fingerprint(self) -> str:
        return prompt_fingerprint(self.system_prompt, self.user_format)


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
    stages: StageDefaults | None = None,
    ref_audio_wav: bytes | None = None,
    ref_text: str | None = None,
) -> JsonObject:
    """The exact chat-completions body of the reference harness. A run seed is added only with
    the server's stage defaults known: as complete per-stage settings with the seed changed (a
    list entry replaces a stage's settings, so a partial one would cut every stage to vLLM's
    16-token default). Without stage defaults the seed is not sent (the run records that)."""
    messages: list[JsonValue] = []
    if template.system_prompt is not None:
        messages.append(
            {"role": "system", "content": [{"type": "text", "text": template.system_prompt}]}
        )
    user = template.user_format.format(text=text)
    messages.append({"role": "user", "content": [{"type": "text", "text": user}]})
    body: JsonObject = {
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
    if seed is not None and stages is not None:
        body["sampling_params_list"] = [*stages.seeded(body, seed)]
    return body


def ref_audio_of(body: JsonObject) -> bytes | None:
    """The reference audio a request carries (a base64 WAV data URL), None when none reads."""
    url = body.get("ref_audio")
    if not isinstance(url, str) or not url.startswith("data:audio/wav;base64,"):
        return None
    try:
        return base64.b64decode(url.split(",", 1)[1], validate=True)
    except (ValueError, binascii.Error):
        return None


def target_text(body: JsonObject) -> str:
    """The user text of a request (what the model must say)."""
    return _content(body, "user") or ""


def system_prompt_of(body: JsonObject) -> str | None:
    return _content(body, "system")


def message_parts(body: JsonObject) -> Iterator[tuple[str, list[JsonObject]]]:
    """(role, content parts) of each message whose content is a list of parts; a part or message
    of another shape is skipped (a request is the client's data)."""
    for m in json_objects(body.get("messages")):
        if isinstance(content := m.get("content"), list):
            yield str(m.get("role")), json_objects(content)


def part_text(part: JsonObject) -> str:
    text = part.get("text")
    return text if isinstance(text, str) else ""


def part_url(part: JsonObject, kind: str) -> str:
    """The URL of an `image_url` / `audio_url` part ("" when it has none)."""
    ref = part.get(kind)
    url = ref.get("url") if isinstance(ref, dict) else None
    return url if isinstance(url, str) else ""


def _content(body: JsonObject, role: str) -> str | None:
    """The text of a request's first message in `role` (its text parts joined), or None."""
    for message in json_objects(body.get("messages")):
        if message.get("role") == role:
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part_text(p) for p in json_objects(content))
    return None


def sse(chunk: JsonObject | str) -> bytes:
    data = chunk if isinstance(chunk, str) else json.dumps(chunk)
    return f"data: {data}\n\n".encode()


@dataclass
class StreamWriter:
    """The chunks of one response stream, shaped as vLLM-Omni's `serving_chat.py` emits them:
    `id`/`object`/`created`/`model` on every chunk; per modality a first chunk whose delta has
    the role and empty content; continuous `usage` when asked; the last content chunk carries
    `finish_reason`; a final usage chunk with `choices: []`; an error is `{"error": {...}}`."""

    model: str
    request_id: str
    created: int
    usage: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def _chunk(self, modality: str | None, choices: list[JsonValue]) -> JsonObject:
        out: JsonObject = {
            "id": self.request_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if modality is not None:
            out["modality"] = modality
        if self.usage:
            out["usage"] = self._usage()
        return out

    def _usage(self) -> JsonObject:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def role(self, modality: str) -> bytes:
        delta: JsonObject = {"role": "assistant", "content": ""}
        return sse(self._chunk(modality, [{"index": 0, "delta": delta, "finish_reason": None}]))

    def text(self, content: str, tokens: int, finish: str | None = None) -> bytes:
        self.completion_tokens += tokens
        choice: JsonObject = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
        return sse(self._chunk("text", [choice]))

    def audio(self, wav: bytes, rate: int, finish: str | None = None) -> bytes:
        choice: JsonObject = {
            "index": 0,
            "delta": {"role": "assistant", "content": base64.b64encode(wav).decode()},
            "audio_metadata": {"sample_rate": rate, "format": "wav"},
            "finish_reason": finish,
        }
        return sse(self._chunk("audio", [choice]))

    def final_usage(self) -> bytes:
        return sse({**self._chunk(None, []), "usage": self._usage()})

    @staticmethod
    def error(message: str, code: int = 500) -> bytes:
        return sse({"error": {"message": message, "type": "InternalServerError", "code": code}})

    @staticmethod
    def done() -> bytes:
        return sse("[DONE]")


# Transcript mode (simulator only): what would have been heard, without audio, in chunks that
# carry their audio duration so the client's audio cap still applies.
SECONDS_PER_WORD = 0.4


def transcript_chunk(words: str, seconds: float, model: str) -> JsonObject:
    return {
        "object": "chat.completion.chunk",
        "model": model,
        "modality": "transcript",
        "simulated": True,
        "audio_seconds": seconds,
        "choices": [{"index": 0, "delta": {"content": words}}],
    }
