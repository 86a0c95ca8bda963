"""Alert keys are spelled in one module; the bisect's pattern matches its pair's keys only."""

from __future__ import annotations

import re

from omni_tasks.alerts import keys


def _like(pattern: str, text: str) -> bool:
    """SQL LIKE with backslash escapes, as Postgres reads it."""
    rx, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            rx, i = rx + re.escape(pattern[i + 1]), i + 2
            continue
        rx += {"%": ".*", "_": "."}.get(ch, re.escape(ch))
        i += 1
    return re.fullmatch(rx, text, re.S) is not None


def test_the_pattern_matches_the_pairs_keys_at_any_tau_and_nothing_else() -> None:
    pattern = keys.regression_pattern("seed_tts_en", "vllm_rebase", "main", "default")
    assert _like(pattern, keys.regression("seed_tts_en", "vllm_rebase", "main", "default", 0.5))
    assert _like(pattern, keys.regression("seed_tts_en", "vllm_rebase", "main", "default", 1.0))
    # `_` in a branch name is a literal, not LIKE's any-character.
    assert not _like(pattern, keys.regression("seed_tts_en", "vllmXrebase", "main", "default", 0.5))
    assert not _like(pattern, keys.infra("seed_tts_en", "vllm_rebase", "main", "default"))
