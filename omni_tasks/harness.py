"""The reference harness by vllm-omni version: what each release's seed-TTS benchmark does that
decides a clip's outcome — the window its Whisper hears and when its client tries a request
again.

Each row is read from that release's own code (`benchmarks/data_modules/seed_tts_eval.py` for
the window, `benchmarks/patch/patch.py: async_request_openai_chat_omni_completions` for the
retries), and the conformance suite checks every pinned row against the wheel. Adding a version
is one row here plus its wheel's hash in `tests/conformance/upstream.py`.
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


@dataclass(frozen=True)
class Harness:
    window: str  # grading/windows.py: truncate30 | whole-timestamps
    retry: RetryRule


HARNESS: dict[str, Harness] = {
    "0.26.0": Harness("truncate30", DROPS_ANYWHERE),
    "0.28.0": Harness("truncate30", DROPS_ANYWHERE),
    "0.30.0": Harness("whole-timestamps", DROPS_ANYWHERE),
    "0.31.0rc1": Harness("whole-timestamps", DROPS_ANYWHERE),
    "0.32.0rc1": Harness("whole-timestamps", BEFORE_OUTPUT),
}


class UnknownHarness(ValueError):
    """A harness version this table has no row for."""


def harness(version: str) -> Harness:
    if version not in HARNESS:
        raise UnknownHarness(f"unknown harness version {version!r}; known: {', '.join(HARNESS)}")
    return HARNESS[version]


def retry_rule(version: str | None) -> RetryRule:
    """The client's retry rule for a run on harness `version` (ours when it names none)."""
    return OURS if version is None else harness(version).retry
