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
