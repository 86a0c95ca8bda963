"""Which database, and a connection to it.

``OMNI_DATABASE_URL`` wins; otherwise an embedded Postgres (pgserver) under ``OMNI_HOME`` is
started on demand and left running (``cleanup_mode=None``) so that consecutive CLI commands
reuse one server and the DSN printed by ``omni-tasks db url`` keeps working after it returns.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import psycopg
from psycopg.rows import class_row, dict_row

from omni_tasks.config import get_settings
from omni_tasks.store.queries import sql
from omni_tasks.trust.redact import redact_dsn

T = TypeVar("T")


class DatabaseError(RuntimeError):
    """The results database could not be reached or used (message says which and why)."""


def embedded_dsn(pgdata: Path) -> str:
    # pgserver asks platformdirs for a runtime dir, which warns when XDG_RUNTIME_DIR is unset.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pgserver

    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode=None)
    return str(server.get_uri())


def stop_embedded(pgdata: Path) -> bool:
    """Stop the embedded server if it runs; True when one was stopped."""
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    pg_ctl(["-w", "stop"], pgdata=pgdata, user="pgserver" if is_root else None)
    return True


def one(cursor: psycopg.Cursor[Any]) -> dict[str, Any]:
    """The single row a RETURNING/aggregate statement yields."""
    row = cursor.fetchone()
    if row is None:
        raise DatabaseError("statement returned no row")
    return dict(row)


class SeriesFilter(TypedDict, total=False):
    """A listing's filters by series and branch (each applies when given)."""

    benchmark: str | None
    model: str | None
    lane: str | None
    branch: str | None


def filtered(given: SeriesFilter, **more: object) -> dict[str, object]:
    """A listing's parameters: every series filter (None where not given) and `more`."""
    return {**dict.fromkeys(SeriesFilter.__annotations__), **given, **more}


def typed(conn: psycopg.Connection[Any], row: type[T], name: str, **args: object) -> list[T]:
    """The rows statement `name` (sql/queries) yields, each a `row` (its fields the columns)."""
    return conn.cursor(row_factory=class_row(row)).execute(sql(name), args).fetchall()


def typed_one(conn: psycopg.Connection[Any], row: type[T], name: str, **args: object) -> T | None:
    """The first row statement `name` yields as a `row`; None when it yields none."""
    return conn.cursor(row_factory=class_row(row)).execute(sql(name), args).fetchone()


def resolve_dsn() -> str:
    settings = get_settings()
    if settings.database_url:
        return settings.database_url
    return embedded_dsn(settings.embedded_pgdata)


def connect(dsn: str | None = None) -> psycopg.Connection[Any]:
    target = dsn or resolve_dsn()
    userinfo = re.match(r"^[a-z]+://([^/?#]*)", target)
    if userinfo and userinfo.group(1).count("@") > 1:
        # libpq would split the password at an '@' and quote the rest as the host name.
        raise DatabaseError(
            f"results DB URL {redact_dsn(target)} has an '@' in its user or password: "
            "percent-encode it as %40"
        )
    try:
        return psycopg.connect(target, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        raise DatabaseError(
            f"cannot connect to results DB {redact_dsn(target)}: {redact_dsn(str(exc), target)}"
        ) from exc
    except psycopg.ProgrammingError as exc:  # a DSN psycopg cannot parse
        raise DatabaseError(
            f"invalid results DB DSN {redact_dsn(target)}: {redact_dsn(str(exc), target)}"
        ) from exc


@contextmanager
def connection(dsn: str | None = None) -> Iterator[psycopg.Connection[Any]]:
    conn = connect(dsn)
    try:
        yield conn
    finally:
        conn.close()
