"""Numbered plain-SQL migrations from ``sql/migrations``, applied once each, in order,
each in its own transaction, with its checksum recorded."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from omni_tasks.config import SQL_DIR
from omni_tasks.store import policy_versions, prompt_fingerprints
from omni_tasks.store.queries import sql

MIGRATIONS_DIR = SQL_DIR / "migrations"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# Serializes concurrent `db migrate` calls (two workers starting at once).
_LOCK_ID = 0x6D6E69
# Data rewrites that SQL cannot express, run right after their migration's SQL, in its
# transaction.
DATA_STEPS: dict[int, Callable[[psycopg.Connection[Any]], None]] = {
    4: policy_versions.rehash,
    8: prompt_fingerprints.rehash,
}


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        m = _NAME.match(path.name)
        if not m:
            raise ValueError(f"{path}: migration files are named NNNN_snake_name.sql")
        found.append(Migration(int(m.group(1)), m.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"{directory}: two migrations share a version number")
    return found


def pending(conn: psycopg.Connection[Any], directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The migrations `migrate` would apply, without applying any (a dry run before an
    upgrade). An applied migration edited since is an error, as in `migrate`."""
    with conn.transaction():
        return _pending(conn, directory)


def _pending(conn: psycopg.Connection[Any], directory: Path) -> list[Migration]:
    conn.execute(sql("create_migrations_table"))
    cur = conn.cursor(row_factory=tuple_row)
    done: dict[int, str] = dict(cur.execute(sql("applied_migrations")))
    found = discover(directory)
    for mig in found:
        if done.get(mig.version, mig.checksum) != mig.checksum:
            raise RuntimeError(
                f"migration {mig.path.name} was edited after it was applied; "
                "add a new migration instead"
            )
    return [mig for mig in found if mig.version not in done]


def apply(conn: psycopg.Connection[Any], mig: Migration) -> None:
    """A migration's SQL and its data step, if it has one (in the caller's transaction)."""
    conn.execute(mig.sql.encode())
    if mig.version in DATA_STEPS:
        DATA_STEPS[mig.version](conn)


def migrate(conn: psycopg.Connection[Any], directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Apply pending migrations; returns those applied now. Safe to call repeatedly."""
    with conn.transaction():
        conn.execute(sql("lock_migrations"), {"lock_id": _LOCK_ID})
        todo = _pending(conn, directory)
        for mig in todo:
            apply(conn, mig)
        mark_applied(conn, todo)
    return todo


def mark_applied(conn: psycopg.Connection[Any], migrations: list[Migration]) -> None:
    """The migrations recorded as applied, with their checksums (in the caller's transaction)."""
    rows = [{"version": m.version, "name": m.name, "checksum": m.checksum} for m in migrations]
    conn.cursor().executemany(sql("record_migration"), rows)
