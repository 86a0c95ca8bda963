"""Backup and restore of the results DB (the `omni` schema and its migration records), with a
manifest of the audio root beside it.

The dump is PostgreSQL's custom format, written by the pg_dump that ships with the pinned
`pgserver` wheel (PostgreSQL 16: it reads servers 9.2 and newer, so the tool never depends on
what the host installed). Audio is not copied (it lives under any fsspec root; copy it with the
store's own tools): the manifest lists every file with its size, so a restore says which stored
clips' audio is missing where the DB expects it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import pgserver
import psycopg
from psycopg.rows import tuple_row

from omni_tasks.store.db import redact
from omni_tasks.store.queries import sql

PG_BIN = Path(pgserver.__file__).resolve().parent / "pginstall" / "bin"
SCHEMA = "omni"


class BackupError(RuntimeError):
    """A backup or restore that did not complete; the message says which step."""


@dataclass(frozen=True)
class BackupReport:
    dump: Path
    manifest: Path
    runs: int
    audio_files: int
    audio_bytes: int


@dataclass(frozen=True)
class RestoreReport:
    runs: int
    migrations: int
    audio_missing: int
    audio_checked: int


def manifest_path(dump: Path) -> Path:
    return dump.with_name(dump.name + ".manifest.json")


def _tool(name: str, args: list[str], what: str, dsn: str) -> None:
    out = subprocess.run(
        [str(PG_BIN / name), *args], capture_output=True, text=True, timeout=6 * 3600, check=False
    )
    if out.returncode != 0:
        raise BackupError(f"{what} failed: {redact(out.stderr.strip()[-800:], dsn)}")


def audio_manifest(root: str) -> dict[str, Any]:
    """Every file under the audio root (relative path and size)."""
    fs, path = fsspec.core.url_to_fs(root)
    entries = []
    if fs.exists(path):
        for name, info in sorted(fs.find(path, detail=True).items()):
            entries.append({"path": name[len(path) :].lstrip("/"), "size": int(info["size"])})
    return {"audio_root": root, "files": entries}


def backup(conn: psycopg.Connection[Any], dsn: str, dump: Path, audio_root: str) -> BackupReport:
    """Dump the results schema to `dump` and write its manifest (migrations, run count, the
    audio root's files) beside it."""
    dump.parent.mkdir(parents=True, exist_ok=True)
    _tool(
        "pg_dump",
        ["--format=custom", f"--schema={SCHEMA}", "--no-owner", "--no-privileges",
         f"--file={dump}", f"--dbname={dsn}"],
        "pg_dump",
        dsn,
    )  # fmt: skip
    migrations = conn.cursor(row_factory=tuple_row).execute(sql("migration_records")).fetchall()
    runs = _runs(conn)
    audio = audio_manifest(audio_root)
    manifest = {
        "format": 1,
        "schema": SCHEMA,
        "runs": runs,
        "migrations": [[v, n, c] for v, n, c in migrations],
        **audio,
    }
    path = manifest_path(dump)
    path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return BackupReport(
        dump, path, runs, len(audio["files"]), sum(f["size"] for f in audio["files"])
    )


def restore(conn: psycopg.Connection[Any], dsn: str, dump: Path, audio_root: str) -> RestoreReport:
    """Restore `dump` into the database (its results schema replaced), record its migrations,
    and check the audio root against the manifest."""
    path = manifest_path(dump)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"{path}: the backup's manifest cannot be read ({exc})") from None
    if manifest.get("format") != 1 or manifest.get("schema") != SCHEMA:
        raise BackupError(f"{path}: not an omni-tasks backup manifest")
    with conn.transaction():
        conn.execute(sql("drop_results_schema"))
    conn.commit()
    _tool(
        "pg_restore",
        ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
         f"--dbname={dsn}", str(dump)],
        "pg_restore",
        dsn,
    )  # fmt: skip
    with conn.transaction():
        conn.execute(sql("create_migrations_table"))
        conn.execute(sql("clear_migration_records"))
        for version, name, checksum in manifest["migrations"]:
            conn.execute(
                sql("record_migration"), {"version": version, "name": name, "checksum": checksum}
            )
    present = {f["path"]: f["size"] for f in audio_manifest(audio_root)["files"]}
    missing = sum(1 for f in manifest["files"] if present.get(f["path"]) != f["size"])
    return RestoreReport(_runs(conn), len(manifest["migrations"]), missing, len(manifest["files"]))


def _runs(conn: psycopg.Connection[Any]) -> int:
    row = conn.cursor(row_factory=tuple_row).execute(sql("count_runs")).fetchone()
    return int(row[0]) if row else 0
