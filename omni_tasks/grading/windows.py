"""Window policies: which part of a clip a grader hears, and which harness version hears it so.

Up to vllm-omni 0.28.0 the reference harness hears one padded 30 s window (`truncate30`); from
0.30.0 it transcribes clips over 30 s whole, with timestamps (`whole-timestamps`). `longform` is
a backend's own long-form decoding, matching no harness version. A grader id names its policy,
so two gradings under different policies are never paired by accident.
"""

from __future__ import annotations

from omni_tasks.harness import HARNESS, UnknownHarness, harness

__all__ = ["UnknownHarness"]

WINDOWS: tuple[str, ...] = ("truncate30", "whole-timestamps", "longform")
# The reference harness's window policy by vllm-omni version (the harness table).
HARNESS_WINDOW: dict[str, str] = {version: h.window for version, h in HARNESS.items()}


def harness_window(version: str) -> str:
    """The window policy of a reference-harness version."""
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
