"""Data step of migration 0004: stored policy versions rewritten to the decision-field hash.

Mapping sources: every gate decision stores the policy it used (old version → that policy's new
version), and the built-in policy maps its legacy version (run stats written by `stats` alone
carry no policy). Rows whose new key already exists keep their old version: nothing is lost.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import tuple_row
from pydantic import ValidationError

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.gates.policy import load_policy
from omni_tasks.store.queries import sql


def version_map(conn: psycopg.Connection[Any]) -> dict[str, str]:
    builtin = load_policy(None)
    mapping = {builtin.legacy_policy_version: builtin.policy_version}
    cur = conn.cursor(row_factory=tuple_row)
    for old, stored in cur.execute(sql("stored_policies")):
        fields = {k: v for k, v in stored.items() if k in GatePolicy.model_fields}
        try:
            mapping[old] = GatePolicy.model_validate(fields).policy_version
        except ValidationError:
            continue  # a policy this code cannot read: its rows stay as they are
    return {old: new for old, new in mapping.items() if old != new}


def rehash(conn: psycopg.Connection[Any]) -> None:
    for old, new in version_map(conn).items():
        conn.execute(sql("rehash_policy_version"), {"old": old, "new": new})
