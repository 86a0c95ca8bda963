"""Data step of migration 0008: imported runs get the one prompt fingerprint (prompts.py).

An import hashed its system prompt alone; a run made here hashes (system prompt, user format).
Upstream's harness sends the text as the user message unchanged, so an imported run's
fingerprint is that of (its system prompt, "{text}"). Only fingerprints made the old way are
rewritten; run keys stay as they were (they name runs)."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from omni_tasks.prompts import prompt_fingerprint
from omni_tasks.store.queries import sql


def rehash(conn: psycopg.Connection[Any]) -> None:
    for row in conn.execute(sql("imported_prompts")).fetchall():
        old = hashlib.sha256(row["system_prompt"].encode()).hexdigest()
        if row["prompt_fingerprint"] == old:
            new = prompt_fingerprint(row["system_prompt"])
            conn.execute(
                sql("set_prompt_fingerprint"), {"run_id": row["run_id"], "fingerprint": new}
            )
