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
    assert _like(
        pattern,
        keys.regression("seed_tts_en", "vllm_rebase", "main", "default", "tail_fraction@0.5"),
    )
    assert _like(
        pattern, keys.regression("seed_tts_en", "vllm_rebase", "main", "default", "tail_fraction@1")
    )
    # `_` in a branch name is a literal, not LIKE's any-character.
    assert not _like(
        pattern,
        keys.regression("seed_tts_en", "vllmXrebase", "main", "default", "tail_fraction@0.5"),
    )
    # The pair's INFRA alert (keys.of_infra's spelling) is not a regression.
    assert not _like(pattern, "seed_tts_en|vllm_rebase|main|default|infra")
    # A multiple-choice alert watches its wrong answers: the same pattern finds it.
    choice = keys.regression_pattern("daily_omni", "rebase", "main", "default")
    assert _like(
        choice, keys.regression("daily_omni", "rebase", "main", "default", "wrong_answers@answer")
    )
