"""Shared fixtures: a private database on the real Postgres server per test session/worker."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from omni_tasks.config import get_settings
from omni_tasks.store.db import connect
from omni_tasks.store.migrate import migrate

SYSTEM_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
# One thread per library (torch, CTranslate2), in the tests and every process they start (read
# when the library loads, later than this): `make test` runs two workers on two cores, and each
# library's per-core spinning threads oversubscribe them (resemblyzer labelling 12 clips beside
# another worker: 27 s with its default threads, 1.1 s with one).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _admin_dsn() -> str:
    """OMNI_TEST_ADMIN_DSN when set; else the system Postgres when one answers; else an
    embedded one (pgserver, under the cache dir), so a fresh machine needs no server."""
    explicit = os.environ.get("OMNI_TEST_ADMIN_DSN")
    if explicit:
        return explicit
    try:
        psycopg.connect(SYSTEM_DSN, connect_timeout=3).close()
        return SYSTEM_DSN
    except psycopg.OperationalError:
        from omni_tasks.config import get_settings
        from omni_tasks.store.db import embedded_dsn

        return embedded_dsn(get_settings().cache_dir / "test-postgres")


ADMIN_DSN = _admin_dsn()


# The test folders, longest tests first: the clusters and compose stacks of reliability/ (minutes
# each), the Airflow runs of integration/ (up to a minute or so), then checks of seconds. xdist
# hands out the shared-cluster groups first and then single tests in collection order, which put
# reliability/'s long tests after conformance/ and integration/, late in the run; in this order
# they start early, and the many short tests of unit/ even out the two workers at the end.
_TIERS = ("reliability", "integration", "conformance", "unit")


def _tier(item: pytest.Item) -> int:
    folders = item.nodeid.split("::")[0].split("/")  # tests/FOLDER/test_x.py
    return _TIERS.index(folders[1]) if len(folders) > 2 and folders[1] in _TIERS else len(_TIERS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` as pytest-xdist means it, on pytest 9.2 too: each xdist worker names a
    test of an `xdist_group` "NODEID@GROUP", and the scheduler keeps a group on one worker.
    xdist 3.8 writes that name to `item._nodeid`, which pytest 9.2 no longer reads (it keeps a
    structured id: pytest-dev/pytest-xdist#1386), so every group was split over the workers and
    each worker built the group's fixture (a Celery night) again. Under it, the tests run
    longest folder first (`_TIERS`)."""
    if not config.getoption("loadgroup", False):
        return
    items.sort(key=_tier)
    for item in items:
        groups = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        named = f"@{'_'.join(groups)}"
        if groups and not item.nodeid.endswith(named):  # xdist's own name did not take
            from _pytest.nodeid import NodeId  # pytest >= 9.2

            item._id = NodeId.parse(item.nodeid + named)


# Every table no foreign key ties to a run (TRUNCATE ... CASCADE empties the others).
_ROOT_TABLES = (
    "omni.run, omni.alert, omni.alert_outbox, omni.branch_head, omni.event, omni.gate_advice,"
    " omni.ledger_item, omni.rerun"
)


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A new empty database on the test server (its DSN), dropped afterwards (and the settings
    cache cleared, so nothing goes on reading a DSN that pointed there)."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(ADMIN_DSN, dbname=name)
    finally:
        get_settings.cache_clear()
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def results_dsn() -> Iterator[str]:
    name = f"omni_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    dsn = make_conninfo(ADMIN_DSN, dbname=name)
    with connect(dsn) as conn:
        migrate(conn)
    yield dsn
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db(results_dsn: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[psycopg.Connection]:
    """A clean results DB; OMNI_DATABASE_URL points at it so CLI calls use it too."""
    monkeypatch.setenv("OMNI_DATABASE_URL", results_dsn)
    monkeypatch.setenv("OMNI_HOME", str(tmp_path / "omni-home"))
    get_settings.cache_clear()
    conn = connect(results_dsn)
    with conn.transaction():
        conn.execute(f"TRUNCATE {_ROOT_TABLES} RESTART IDENTITY CASCADE")
    yield conn
    conn.close()
    get_settings.cache_clear()
