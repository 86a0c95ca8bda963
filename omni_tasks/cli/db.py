"""The results database: its URL, migrations, the embedded server."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from omni_tasks.cli.common import console, db_app, open_db
from omni_tasks.config import get_settings


# ---------------------------------------------------------------- db
@db_app.command("url")
def db_url(
    show_password: Annotated[bool, typer.Option(help="Print the password instead of ***")] = False,
) -> None:
    """Print the results DB DSN on one line (starts the embedded server if needed)."""
    from omni_tasks.store.db import redact, resolve_dsn

    dsn = resolve_dsn()
    sys.stdout.write((dsn if show_password else redact(dsn)) + "\n")


@db_app.command("migrate")
def db_migrate() -> None:
    """Apply pending schema migrations (idempotent)."""
    from omni_tasks.store.migrate import migrate

    conn = open_db(migrate=False)
    with conn:
        applied = migrate(conn)
    if applied:
        for m in applied:
            console.print(f"applied {m.version:04d}_{m.name}")
    else:
        console.print("schema is up to date")


@db_app.command("start")
def db_start() -> None:
    """Start the embedded Postgres (no-op when OMNI_DATABASE_URL is set or it runs)."""
    from omni_tasks.store.db import embedded_dsn, redact

    settings = get_settings()
    if settings.database_url:
        console.print("OMNI_DATABASE_URL is set; the embedded server is not used")
        return
    console.print(f"embedded Postgres running: {redact(embedded_dsn(settings.embedded_pgdata))}")


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded Postgres."""
    from omni_tasks.store.db import stop_embedded

    stopped = stop_embedded(get_settings().embedded_pgdata)
    console.print("embedded Postgres stopped" if stopped else "embedded Postgres was not running")
