"""Shared by the benchmarks: a private scratch database on the local Postgres."""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from omni_tasks.store.db import connect
from omni_tasks.store.migrate import migrate

ADMIN_DSN = os.environ.get("OMNI_TEST_ADMIN_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def scratch_db(keep: str | None = None) -> Iterator[psycopg.Connection[Any]]:
    """A migrated database that is dropped afterwards (or kept, by name, with `keep`)."""
    name = keep or f"omni_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{name}"')
    conn = connect(make_conninfo(ADMIN_DSN, dbname=name))
    migrate(conn)
    try:
        yield conn
    finally:
        conn.close()
        if keep is None:
            with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def timed(fn: Callable[[], Any], repeat: int = 5) -> tuple[float, list[float]]:
    """(median seconds, all samples)."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), samples


def p95(samples: list[float]) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def bare_run(conn: psycopg.Connection[Any], label: str) -> tuple[int, int]:
    """A minimal run + grading row (no hashing, no checks): the baselines' target."""
    run_id = conn.execute(
        "INSERT INTO omni.run (run_key, benchmark, nightly, branch, trigger, status, config_hash, "
        "n_expected, content_hash) VALUES (%s, 'b', '2026-11-01', %s, 'import', 'complete', '', "
        "1088, %s) RETURNING run_id",
        (label, label, label),
    ).fetchone()["run_id"]  # type: ignore[index]
    grading_id = conn.execute(
        "INSERT INTO omni.grading (run_id, grader_id) VALUES (%s, 'g') RETURNING grading_id",
        (run_id,),
    ).fetchone()["grading_id"]  # type: ignore[index]
    return int(run_id), int(grading_id)


def raw_copy(
    conn: psycopg.Connection[Any], label: str, clips: list[Any], grades: list[Any]
) -> None:
    """The I/O floor: the same clip rows through the store's plain COPY, in one transaction,
    without what save_run adds (checks, hashing, idempotency)."""
    from omni_tasks.store.runs import copy_clip_audio, copy_clip_grades

    with conn.transaction():
        run_id, grading_id = bare_run(conn, label)
        copy_clip_audio(conn, run_id, clips)
        copy_clip_grades(conn, grading_id, grades)


def insert_row(conn: psycopg.Connection[Any], table: str, key: tuple[str, int], row: Any) -> None:
    """One INSERT of a clip record, its columns named by the record's own fields (so the
    baseline follows the schema as the records do)."""
    import dataclasses

    from psycopg.types.json import Jsonb

    values = {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    values = {
        key[0]: key[1],
        **{k: Jsonb(v) if isinstance(v, dict) else v for k, v in values.items()},
    }
    columns = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    conn.execute(f"INSERT INTO omni.{table} ({columns}) VALUES ({marks})", list(values.values()))
