"""The results database: its URL, migrations, the embedded server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, db_app, fail
from omni_tasks.config import get_settings


@db_app.command("url")
def db_url(
    show_password: Annotated[bool, typer.Option(help="Print the password instead of ***")] = False,
) -> None:
    """Print the results DB DSN on one line (starts the embedded server if needed)."""
    from omni_tasks.store.db import resolve_dsn
    from omni_tasks.trust.redact import redact_dsn

    dsn = resolve_dsn()
    sys.stdout.write((dsn if show_password else redact_dsn(dsn)) + "\n")


@db_app.command("migrate")
def db_migrate(
    plan: Annotated[
        bool, typer.Option("--plan", help="List the pending migrations; apply nothing")
    ] = False,
) -> None:
    """Apply pending schema migrations (idempotent). Before an upgrade, `--plan` says what the
    new version would apply."""
    from omni_tasks.store.migrate import migrate, pending

    todo = opt.on_db(
        lambda conn: pending(conn) if plan else migrate(conn), RuntimeError, migrate=False
    )
    verb = "pending" if plan else "applied"
    for m in todo:
        console.print(f"{verb} {m.version:04d}_{m.name}")
    if not todo:
        console.print("schema is up to date")


@db_app.command("backup")
def db_backup(
    file: Annotated[Path, typer.Argument(help="The dump to write (custom format)")],
) -> None:
    """Dump the results schema (pg_dump, custom format) and write FILE.manifest.json beside it:
    the migrations, the run count and every file under the audio root (copy the audio itself
    with your store's tools: rsync, object versioning)."""
    from omni_tasks.store.backup import BackupError, backup
    from omni_tasks.store.db import resolve_dsn

    r = opt.on_db(
        lambda conn: backup(conn, resolve_dsn(), file, get_settings().audio_root_url), BackupError
    )
    console.print(
        f"backed up {r.runs} run(s) to {r.dump}; manifest {r.manifest} lists "
        f"{r.audio_files} audio file(s), {r.audio_bytes / 1e6:.1f} MB",
    )


@db_app.command("restore")
def db_restore(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A `db backup` dump")],
    yes: Annotated[
        bool, typer.Option("--yes", help="Replace the results schema of the target DB")
    ] = False,
) -> None:
    """Restore a `db backup` into the results DB (its results schema is replaced), record the
    backup's migrations, and check the audio root against the backup's manifest. Run `db
    migrate` afterwards when this version has newer migrations.

    The backup is vetted in a scratch database first (only tables, sequences, indexes and
    constraints of the results schema, as its migrations make them; restored by a temporary
    role without superuser) and swapped in at the end in one transaction: a bad or hostile
    backup fails with the live schema untouched. Views, functions and triggers come from the
    migrations, never from the backup. Needs CREATEROLE and CREATEDB (or a superuser)."""
    from omni_tasks.store.backup import BackupError, restore
    from omni_tasks.store.db import resolve_dsn
    from omni_tasks.trust.redact import redact_dsn

    dsn = resolve_dsn()
    if not yes:
        fail(f"this replaces the results schema of {redact_dsn(dsn)}: add --yes")
    r = opt.on_db(
        lambda conn: restore(
            conn,
            dsn,
            file,
            get_settings().audio_root_url,
            progress=lambda step: console.print(f"{step}…"),
        ),
        BackupError,
        migrate=False,
    )
    console.print(
        f"restored {r.runs} run(s) and {r.migrations} migration record(s); audio: "
        f"{r.audio_checked - r.audio_missing} of {r.audio_checked} file(s) in place",
    )
    if r.audio_missing:
        console.print(f"[yellow]{r.audio_missing} audio file(s) missing or of another size[/]")


@db_app.command("start")
def db_start() -> None:
    """Start the embedded Postgres (no-op when OMNI_DATABASE_URL is set or it runs)."""
    from omni_tasks.store.db import embedded_dsn
    from omni_tasks.trust.redact import redact_dsn

    settings = get_settings()
    if settings.database_url:
        console.print("OMNI_DATABASE_URL is set; the embedded server is not used")
        return
    console.print(
        f"embedded Postgres running: {redact_dsn(embedded_dsn(settings.embedded_pgdata))}"
    )


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded Postgres."""
    from omni_tasks.store.db import stop_embedded

    stopped = stop_embedded(get_settings().embedded_pgdata)
    console.print("embedded Postgres stopped" if stopped else "embedded Postgres was not running")
