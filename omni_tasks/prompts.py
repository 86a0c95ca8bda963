"""The prompt fingerprint: one function for every run, synthesized or imported, so that two
runs that put the text to the model the same way pair, whoever ran them."""

from __future__ import annotations

import hashlib
import json

# How upstream's seed-TTS harness sends the target text: as the user message, unchanged.
PLAIN_USER_FORMAT = "{text}"


def prompt_fingerprint(system_prompt: str | None, user_format: str = PLAIN_USER_FORMAT) -> str:
    return hashlib.sha256(json.dumps([system_prompt, user_format]).encode()).hexdigest()
