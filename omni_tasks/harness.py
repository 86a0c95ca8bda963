"""The reference harness by vllm-omni version: what each release's seed-TTS benchmark does that
decides a clip's outcome — the window its Whisper hears (and so which gradings pair), and its
client's rules: when it tries a request again, what counts as output already seen, whether an
in-stream error chunk fails the request, which audio chunks it keeps, and how long it waits.

Each row is read from that release's own code (`benchmarks/data_modules/seed_tts_eval.py` for
the window, `benchmarks/patch/patch.py: async_request_openai_chat_omni_completions` and
`_omni_request_timeout_s` for the client), and the conformance suite replays every rule through
the pinned wheel's own client function. Adding a version is one row here plus its wheel's hash
in `tests/conformance/upstream.py`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryRule:
    """When the client sends a request again, and how often.

    `after_output`: a connection that breaks after output arrived is tried again too (the clip
    then starts over). `unavailable`: a 503 `ServiceUnavailableError` before any output, as an
    HTTP answer or as in-stream error chunks, is tried again. Nothing else is retried: any other
    HTTP error or in-stream error fails the clip."""

    name: str
    retries: int
    delay_s: float
    incrementing: bool = False  # wait delay, 2×delay, … (else a fixed delay)
    after_output: bool = False
    unavailable: bool = False

    def describe(self) -> str:
        drops = "any dropped connection" if self.after_output else "a drop before output"
        also = " and 503-before-output" if self.unavailable else ""
        return f"{self.name}: up to {self.retries} retries of {drops}{also}"


# Up to 0.31: `except aiohttp.ClientError` retries whatever arrived (3 retries, 0.1 s apart).
DROPS_ANYWHERE = RetryRule("vllm-omni ≤0.31", retries=3, delay_s=0.1, after_output=True)
# From 0.32.0rc1: only before any visible output, and also the server's retryable 503
# (`_is_retryable_omni_error`: type ServiceUnavailableError, code 503).
BEFORE_OUTPUT = RetryRule("vllm-omni ≥0.32", retries=3, delay_s=0.1, unavailable=True)
# A run that names no harness version: drops before output only, with a growing wait (a
# server restarting under us gets a few seconds).
OURS = RetryRule("omni-tasks", retries=3, delay_s=1.0, incrementing=True)


# The audio a harness run keeps at most (BenchRequest.audio_cap: the deadline's worth, up to 15
# min); a longer answer is kept as that much.
LONGEST_CLIP_S = 900.0


@dataclass(frozen=True)
class Reading:
    """How the client reads the stream's bytes.

    `lenient_base64`: audio is decoded as Python's `b64decode(data)` decodes it (characters
    outside the alphabet skipped) and a chunk that still does not decode fails the request;
    else strict decoding, and such a chunk is dropped. `past_done`: `data: [DONE]` is skipped
    and reading goes on to the end of the body; else it ends the stream. Events are framed
    alike by every client (`synthesis.bounded.sse_events`: vLLM's `StreamedResponseHandler`),
    and one may hold the longest clip a run keeps."""

    lenient_base64: bool = False
    past_done: bool = False


# vLLM's StreamedResponseHandler and the omni chat client, every pinned release: `[DONE]` is
# skipped (`if chunk != "[DONE]"`) and the body read to its end; `base64.b64decode(content)`
# sits outside the chunk's try, so a decoding error ends in `except Exception`: failed, never
# retried; no bound on an event's length (ours: `bounded.MAX_EVENT`, above a LONGEST_CLIP_S clip).
UPSTREAM_READING = Reading(lenient_base64=True, past_done=True)


@dataclass(frozen=True)
class ClientRules:
    """How a release's client turns one response into a clip's outcome."""

    retry: RetryRule
    # An in-stream error chunk (HTTP 200, `data: {"error": …}`) fails the request (0.30 on);
    # 0.28's client skipped such chunks and scored what else arrived.
    error_chunks: bool = True
    # "Output already seen" for the retry rule is any choice's `token_ids`, `text` or
    # `message`, or any delta key but `role` (0.32: a reasoning, tool-call or audio delta
    # counts); else the first choice's text or audio.
    any_visible: bool = False
    # Audio chunks are read as Python's `wave` reads them (PCM only: an IEEE-float WAV is
    # dropped) and a chunk whose (channels, sample width, rate) differ from the first is
    # dropped; else float WAV is decoded and only the rate is compared.
    strict_wav: bool = False
    timeout_s: float = 900.0  # the whole request's deadline
    reading: Reading = Reading()


# 0.28: a 6 h aiohttp total timeout (vLLM's session default), in-stream errors not read.
CLIENT_028 = ClientRules(
    DROPS_ANYWHERE,
    error_chunks=False,
    strict_wav=True,
    timeout_s=6 * 3600,
    reading=UPSTREAM_READING,
)
# 0.30 / 0.31: error chunks fail the request; `_omni_request_timeout_s`: 900 s.
CLIENT_030 = ClientRules(DROPS_ANYWHERE, strict_wav=True, reading=UPSTREAM_READING)
# 0.32.0rc1: retries only before any visible choice (`response_output_received`).
CLIENT_032 = ClientRules(BEFORE_OUTPUT, any_visible=True, strict_wav=True, reading=UPSTREAM_READING)
# A run that names no harness version.
OUR_CLIENT = ClientRules(OURS)


@dataclass(frozen=True)
class Harness:
    window: str  # one of WINDOWS: truncate30 | whole-timestamps
    client: ClientRules


HARNESS: dict[str, Harness] = {
    "0.26.0": Harness("truncate30", CLIENT_028),
    "0.28.0": Harness("truncate30", CLIENT_028),
    "0.30.0": Harness("whole-timestamps", CLIENT_030),
    "0.31.0rc1": Harness("whole-timestamps", CLIENT_030),
    "0.32.0rc1": Harness("whole-timestamps", CLIENT_032),
}


class UnknownHarness(ValueError):
    """A harness version this table has no row for."""


def harness(version: str) -> Harness:
    if version not in HARNESS:
        raise UnknownHarness(f"unknown harness version {version!r}; known: {', '.join(HARNESS)}")
    return HARNESS[version]


def client_rules(version: str | None) -> ClientRules:
    """The client's rules for a run on harness `version` (ours when it names none)."""
    return OUR_CLIENT if version is None else harness(version).client


# Window policies: which part of a clip a grader hears. Up to vllm-omni 0.28.0 the reference
# harness hears one padded 30 s window (`truncate30`); from 0.30.0 it transcribes clips over
# 30 s whole, with timestamps (`whole-timestamps`). `longform` is a backend's own long-form
# decoding, matching no harness version. A grader id names its policy, so two gradings under
# different policies are never paired by accident.
WINDOWS: tuple[str, ...] = ("truncate30", "whole-timestamps", "longform")
HARNESS_WINDOW: dict[str, str] = {version: h.window for version, h in HARNESS.items()}


def harness_window(version: str) -> str:
    return harness(version).window


# The seed-TTS artifact's grader before its harness version is known: a WER grader whose
# window policy nobody can tell (the other graders either name theirs or score no audio).
BARE_ARTIFACT_GRADER = "artifact:vllm-omni-seed-tts"


def window_unknown(grader_id: str) -> bool:
    return grader_id == BARE_ARTIFACT_GRADER


def window_of(grader_id: str) -> str | None:
    """The window policy a grader id names, or None (an artifact of unknown harness version)."""
    return next((part for part in grader_id.split("/") if part in WINDOWS), None)


def harnesses_of(window: str) -> list[str]:
    """The harness versions that grade under a window policy."""
    return [v for v, w in HARNESS_WINDOW.items() if w == window]
