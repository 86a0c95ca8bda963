"""Backup and restore of the results DB (the `omni` schema and its migration records), with a
manifest of the audio root beside it.

The dump is PostgreSQL's custom format, written by the pg_dump that ships with the pinned
`pgserver` wheel (PostgreSQL 16: it reads servers 9.2 and newer, so the tool never depends on
what the host installed). Audio is not copied (it lives under any fsspec root; copy it with the
store's own tools): the manifest lists every file with its size, so a restore says which stored
clips' audio is missing where the DB expects it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import secrets
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import fsspec
import pgserver
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row, tuple_row
from psycopg.sql import SQL, Composed, Identifier, Literal

from omni_tasks.contracts import JsonObject
from omni_tasks.store.migrate import Migration, apply, discover, mark_applied
from omni_tasks.store.queries import sql
from omni_tasks.trust.redact import redact_dsn

PG_BIN = Path(pgserver.__file__).resolve().parent / "pginstall" / "bin"
SCHEMA = "omni"
NOTHING = "; nothing was restored"  # how a refusal ends: the live schema is as it was


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


@dataclass(frozen=True)
class AudioFile:
    """A file under the audio root: its path relative to the root, and its size in bytes."""

    path: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """What a backup's manifest (FILE.manifest.json, format 1) holds: the migrations its schema
    was made by, (version, name, checksum) each; its run count; the audio root's files."""

    runs: int
    migrations: tuple[tuple[int, str, str], ...]
    audio_root: str
    files: tuple[AudioFile, ...]

    def to_json(self) -> JsonObject:
        return {
            "format": 1,
            "schema": SCHEMA,
            "runs": self.runs,
            "migrations": [[v, n, c] for v, n, c in self.migrations],
            "audio_root": self.audio_root,
            "files": [{"path": f.path, "size": f.size} for f in self.files],
        }


def manifest_path(dump: Path) -> Path:
    return dump.with_name(dump.name + ".manifest.json")


def _pg(
    name: str,
    args: list[str],
    dsn: str,
    failed: str,
    end: str = "",
    *,
    timeout: int = 6 * 3600,
    env: dict[str, str] | None = None,
) -> str:
    """Run one of the Postgres client tools: its output, else a BackupError that reads
    "`failed`: its error`end`" (`dsn`'s secrets kept out of it)."""
    out = subprocess.run(
        [str(PG_BIN / name), *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    if out.returncode != 0:
        error = redact_dsn(out.stderr.strip()[-800:], dsn) or f"{name} failed"
        raise BackupError(f"{failed}: {error}{end}")
    return out.stdout


def _pg_dump(
    dsn: str, what: str, source: str, file: Path, schema: str = SCHEMA, *, grants: bool = False
) -> None:
    """Dump `schema` of the database at `source` in pg_dump's custom format, without owners
    (and without grants unless `grants`)."""
    args = ["--format=custom", f"--schema={schema}", "--no-owner", f"--file={file}"]
    args += [f"--dbname={source}"] + ([] if grants else ["--no-privileges"])
    _pg("pg_dump", args, dsn, f"{what} failed")


def audio_manifest(root: str) -> tuple[AudioFile, ...]:
    """Every file under the audio root (relative path and size)."""
    fs, path = fsspec.core.url_to_fs(root)
    entries = []
    if fs.exists(path):
        for name, info in sorted(fs.find(path, detail=True).items()):
            entries.append(AudioFile(name[len(path) :].lstrip("/"), int(info["size"])))
    return tuple(entries)


def backup(conn: psycopg.Connection[Any], dsn: str, dump: Path, audio_root: str) -> BackupReport:
    """Dump the results schema to `dump` and write its manifest (migrations, run count, the
    audio root's files) beside it."""
    dump.parent.mkdir(parents=True, exist_ok=True)
    _pg_dump(dsn, "pg_dump", dsn, dump)
    migrations = conn.cursor(row_factory=tuple_row).execute(sql("migration_records")).fetchall()
    manifest = Manifest(
        runs=_runs(conn),
        migrations=tuple((v, n, c) for v, n, c in migrations),
        audio_root=audio_root,
        files=audio_manifest(audio_root),
    )
    path = manifest_path(dump)
    path.write_text(json.dumps(manifest.to_json(), indent=1), encoding="utf-8")
    return BackupReport(
        dump, path, manifest.runs, len(manifest.files), sum(f.size for f in manifest.files)
    )


def restore(
    conn: psycopg.Connection[Any],
    dsn: str,
    dump: Path,
    audio_root: str,
    progress: Callable[[str], None] = lambda _: None,
) -> RestoreReport:
    """Restore `dump` into the database (its results schema replaced), record its migrations,
    and check the audio root against the manifest.

    The live schema is touched once, by one transaction at the end; any failure before leaves
    it exactly as it was. The archive's table of contents must list only the results schema's
    kinds of object (an allow-list); its tables, sequences, indexes and constraints are
    restored into a scratch database by a temporary role with no privileges beyond that
    database, compared with what the manifest's migrations create (built in a second scratch
    database), then moved into a staging schema of the target by the same role and swapped in.
    Views, functions and triggers are never taken from the archive: the swap recreates them
    from the migrations, so restoring runs no code the archive carries."""
    manifest = _read_manifest(dump)
    migrations = _manifest_migrations(dump, manifest)
    progress(f"checking {dump}")
    entries = _toc(dump, dsn)
    _refuse(dump, [e for e in entries if not e.allowed], "objects of other kinds or schemas")
    with _Workspace(conn, dsn) as ws:
        ref_dsn = ws.database("ref")
        progress(
            f"building the schema of {len(migrations)} migration(s) in scratch database "
            f"{ws.role}_ref to compare with"
        )
        _apply_migrations(ref_dsn, migrations)
        ref_dump = ws.tmp / "reference.dump"
        # Its grants kept: the swap takes the migrations' grants from this dump.
        _pg_dump(dsn, "pg_dump of the migrations' schema", ref_dsn, ref_dump, grants=True)
        ref_entries = _toc(ref_dump, dsn)
        known = {e.text for e in ref_entries if e.desc in _CODE}
        _refuse(
            dump,
            [e for e in entries if e.desc in _CODE and e.text not in known],
            "views, functions or triggers the migrations do not create",
        )
        progress(f"restoring into a scratch database as role {ws.role} (no superuser)")
        scratch_dsn = ws.database("scratch", grant=True)
        data_list = ws.tmp / "data.list"
        data_list.write_text("".join(f"{e.line}\n" for e in entries if e.desc in _DATA))
        _restore_as(ws, scratch_dsn, ["--use-list", str(data_list), str(dump)])
        _compare(dump, scratch_dsn, ref_dsn, ws.role)
        progress("staging the restored schema beside the live one")
        staged = ws.staged
        with psycopg.connect(scratch_dsn, autocommit=True) as scratch:
            scratch.execute(_q("restore_rename_schema", old=SCHEMA, new=staged))
        staged_dump = ws.tmp / "staged.dump"
        _pg_dump(dsn, "pg_dump of the vetted scratch database", scratch_dsn, staged_dump, staged)
        _restore_as(ws, ws.grant_live(), [str(staged_dump)])
        code = _script(ref_dump, ref_entries, ws.tmp, dsn)
        progress("swapping the restored schema in")
        with conn.transaction():
            conn.execute(_q("restore_swap_schema", staged=staged, role=ws.role))
            conn.execute(code)
            conn.execute(sql("create_migrations_table"))
            conn.execute(sql("clear_migration_records"))
            mark_applied(conn, migrations)
        conn.execute("RESET ALL")  # the script's session settings (search_path among them)
        conn.commit()
    present = {f.path: f.size for f in audio_manifest(audio_root)}
    missing = sum(1 for f in manifest.files if present.get(f.path) != f.size)
    return RestoreReport(_runs(conn), len(manifest.migrations), missing, len(manifest.files))


# What an archive of the results schema may hold. Data-bearing objects are restored from it…
_DATA = frozenset(
    {
        "SCHEMA",
        "TABLE",
        "TABLE DATA",
        "TABLE ATTACH",
        "SEQUENCE",
        "SEQUENCE SET",
        "SEQUENCE OWNED BY",
        "DEFAULT",
        "CONSTRAINT",
        "CHECK CONSTRAINT",
        "FK CONSTRAINT",
        "INDEX",
        "INDEX ATTACH",
        "COMMENT",
    }
)
# …objects holding code only when the migrations create one of that name, and then never from
# the archive (the swap recreates the migrations' own).
_CODE = frozenset({"VIEW", "MATERIALIZED VIEW", "MATERIALIZED VIEW DATA", "FUNCTION", "TRIGGER"})
# What the migrations' schema adds at the swap: its code and the grants (omni_reader's).
_SWAP = _CODE | {"ACL", "DEFAULT ACL"}
_DESCS = sorted(_DATA | _SWAP, key=len, reverse=True)
_TOC_LINE = re.compile(r"^(\d+); \d+ \d+ (.*)$")


@dataclass(frozen=True)
class _Entry:
    """One line of `pg_restore --list`: `ID; CATALOG OID DESC SCHEMA NAME OWNER`."""

    line: str
    desc: str  # "" when not a kind this module knows
    schema: str
    text: str  # DESC SCHEMA NAME, the owner left out

    @property
    def allowed(self) -> bool:
        if self.desc == "SCHEMA":
            return self.text == f"SCHEMA - {SCHEMA}"
        return self.desc in _DATA | _CODE and self.schema == SCHEMA


def _toc(dump: Path, dsn: str) -> list[_Entry]:
    unreadable = f"{dump} is not a readable pg_dump archive"
    listed = _pg("pg_restore", ["--list", str(dump)], dsn, unreadable, NOTHING, timeout=600)
    entries = []
    for line in listed.splitlines():
        m = _TOC_LINE.match(line)
        if not m:
            continue
        rest = m.group(2)
        desc = next((d for d in _DESCS if rest.startswith(d + " ")), "")
        schema = rest[len(desc) + 1 :].split(" ", 1)[0] if desc else ""
        text = rest.rsplit(" ", 1)[0] if " " in rest else rest
        entries.append(_Entry(line, desc, schema, text))
    if not entries:
        raise BackupError(f"{dump}: the archive lists no objects{NOTHING}")
    return entries


def _refuse(dump: Path, refused: list[_Entry], what: str) -> None:
    if refused:
        raise BackupError(
            f"{dump} holds {len(refused)} object(s) a results-schema backup cannot ({what}): "
            f"{_first([e.text for e in refused])}{NOTHING}"
        )


def _first(items: list[str], sep: str = ", ") -> str:
    """The first ten of `items`, and how many more there are."""
    return sep.join(items[:10]) + (f" and {len(items) - 10} more" if len(items) > 10 else "")


def _is_int(value: object) -> TypeGuard[int]:
    """An integer, true/false aside (JSON's `true` reads as a bool, which is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _read_manifest(dump: Path) -> Manifest:
    """The backup's manifest, every field of the shape backup() writes, else refused."""
    path = manifest_path(dump)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"{path}: the backup's manifest cannot be read ({exc})") from None
    if not (
        isinstance(data, dict)
        and data.get("format") == 1
        and data.get("schema") == SCHEMA
        and _is_int(runs := data.get("runs"))
        and isinstance(records := data.get("migrations"), list)
        and isinstance(audio_root := data.get("audio_root"), str)
        and isinstance(files := data.get("files"), list)
        and all(
            isinstance(f, dict) and isinstance(f.get("path"), str) and _is_int(f.get("size"))
            for f in files
        )
    ):
        raise BackupError(f"{path}: not an omni-tasks backup manifest")
    migrations = []
    for record in records:
        match record:
            case [int(version), str(name), str(checksum)] if _is_int(version):
                migrations.append((version, name, checksum))
            case _:
                raise BackupError(f"{path}: a migration record reads {record!r}")
    return Manifest(
        runs=runs,
        migrations=tuple(migrations),
        audio_root=audio_root,
        files=tuple(AudioFile(f["path"], f["size"]) for f in files),
    )


def _manifest_migrations(dump: Path, manifest: Manifest) -> list[Migration]:
    """The migrations the backup's schema was made by: each one this version has, unedited."""
    ours = {m.version: m for m in discover()}
    out = []
    for version, name, checksum in manifest.migrations:
        mine = ours.get(version)
        if mine is None or mine.name != name or mine.checksum != checksum:
            raise BackupError(
                f"{manifest_path(dump)}: the backup was made at migration {version:04d}_{name}, "
                "which this version of omni-tasks "
                + ("does not have" if mine is None else "has with other contents")
                + ": restore it with the version that made it"
            )
        out.append(mine)
    return sorted(out, key=lambda m: m.version)


def _apply_migrations(dsn: str, migrations: list[Migration]) -> None:
    with psycopg.connect(dsn, row_factory=dict_row) as ref, ref.transaction():
        for mig in migrations:
            apply(ref, mig)


def _compare(dump: Path, scratch_dsn: str, ref_dsn: str, role: str) -> None:
    """Refuse a restored schema unlike the migrations' (their views, functions and triggers
    aside: the swap brings those), and anything else the restore's role came to own."""
    rows: list[set[tuple[str, str, str]]] = []
    for target in (scratch_dsn, ref_dsn):
        with psycopg.connect(target) as c:
            cur = c.cursor(row_factory=tuple_row)
            rows.append(set(cur.execute(sql("restore_fingerprint")).fetchall()))
            owned = [r[0] for r in cur.execute(sql("restore_owned_objects"), {"role": role})]
        if target == scratch_dsn and owned:
            raise BackupError(f"{dump} created objects a backup cannot: {_first(owned)}{NOTHING}")
    got, ref = rows
    want = {r for r in ref if r[0] not in ("view", "function", "trigger")}
    diff = [f"unexpected {k} {n}" for k, n, _ in sorted(got - want)]
    diff += [f"missing or different {k} {n}" for k, n, _ in sorted(want - got)]
    if diff:
        raise BackupError(
            f"{dump}: its schema is not the one its manifest's migrations create: "
            f"{_first(diff, '; ')}{NOTHING}"
        )


def _script(ref_dump: Path, ref_entries: list[_Entry], tmp: Path, dsn: str) -> bytes:
    """The migrations' views, functions, triggers and grants as SQL (run at the swap)."""
    listing = tmp / "code.list"
    listing.write_text("".join(f"{e.line}\n" for e in ref_entries if e.desc in _SWAP))
    script = tmp / "code.sql"
    args = ["--no-owner", "--use-list", str(listing), f"--file={script}", str(ref_dump)]
    _pg("pg_restore", args, dsn, "pg_restore of the migrations' views and functions failed")
    lines = script.read_text(encoding="utf-8").splitlines()
    return "\n".join(x for x in lines if not x.startswith("\\")).encode()  # psql meta-commands


# Everything an archive could carry beyond tables and their data is left out; one transaction,
# stopped at the first error.
_RESTORE_FLAGS = (
    "--no-owner",
    "--no-privileges",
    "--no-tablespaces",
    "--no-publications",
    "--no-subscriptions",
    "--no-security-labels",
    "--single-transaction",
    "--exit-on-error",
)


def _restore_as(ws: _Workspace, target: str, args: list[str]) -> None:
    env = {**os.environ, "PGPASSWORD": ws.password}
    args = [*_RESTORE_FLAGS, f"--dbname={target}", *args]
    _pg("pg_restore", args, ws.dsn, f"pg_restore failed (as role {ws.role})", NOTHING, env=env)


def _q(name: str, **names: str) -> Composed:
    """A statement of sql/queries with identifiers (`{role}`, `{db}`…) filled in."""
    return SQL(sql(name)).format(**{k: Identifier(v) for k, v in names.items()})


class _Workspace:
    """A restore's temporary role, scratch databases, staging schema and files; all gone when
    it closes, whether the restore succeeded or not."""

    def __init__(self, conn: psycopg.Connection[Any], dsn: str) -> None:
        tag = secrets.token_hex(5)
        self.dsn = dsn
        self.role = f"omni_restore_{tag}"
        self.staged = f"omni_restore_{tag}"
        self.password = secrets.token_urlsafe(24)
        self.databases: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="omni-restore-")
        self.tmp = Path(self._tmp.name)
        self._granted = False
        row = conn.cursor(row_factory=tuple_row).execute(sql("is_superuser")).fetchone()
        conn.commit()
        assert row is not None
        self.superuser, self.live_db = bool(row[0]), str(row[1])
        self.admin = psycopg.connect(dsn, autocommit=True)

    def __enter__(self) -> _Workspace:
        until = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
        try:
            self.admin.execute(
                SQL(sql("restore_role")).format(
                    role=Identifier(self.role),
                    password=Literal(self.password),
                    until=Literal(until),
                )
            )
            if not self.superuser:
                self.admin.execute(_q("restore_join_role", role=self.role))
        except psycopg.Error as exc:
            self.close()
            raise BackupError(
                f"restore needs to create a role (CREATEROLE) and scratch databases (CREATEDB): "
                f"{redact_dsn(str(exc).strip(), self.dsn)}"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def database(self, purpose: str, *, grant: bool = False) -> str:
        """A new empty database (its DSN: as this role when `grant`, else as the caller)."""
        name = f"{self.role}_{purpose}"
        try:
            self.admin.execute(_q("restore_scratch_database", db=name))
            self.databases.append(name)
            if grant:
                self.admin.execute(_q("restore_grant_database", db=name, role=self.role))
        except psycopg.Error as exc:
            raise BackupError(
                f"cannot create a scratch database: {redact_dsn(str(exc).strip(), self.dsn)}"
            ) from None
        return self._dsn(name, as_role=grant)

    def grant_live(self) -> str:
        """The live database opened to this role (until it closes); its DSN as the role."""
        self._granted = True
        self.admin.execute(_q("restore_grant_database", db=self.live_db, role=self.role))
        return self._dsn(self.live_db, as_role=True)

    def _dsn(self, db: str, *, as_role: bool) -> str:
        params = conninfo_to_dict(self.dsn)
        params["dbname"] = db
        if as_role:
            params["user"] = self.role
            params.pop("password", None)  # PGPASSWORD carries the role's
            params.pop("passfile", None)
        return make_conninfo("", **params)

    def close(self) -> None:
        """Drop what the restore made, best effort (a role left behind expires in a day)."""
        steps = [_q("restore_drop_schema", schema=self.staged)]
        if self._granted:
            steps.append(_q("restore_revoke_database", db=self.live_db, role=self.role))
        steps += [_q("restore_drop_database", db=d) for d in self.databases]
        steps.append(_q("restore_drop_role", role=self.role))
        for step in steps:
            with contextlib.suppress(psycopg.Error):
                self.admin.execute(step)
        self.admin.close()
        self._tmp.cleanup()


def _runs(conn: psycopg.Connection[Any]) -> int:
    row = conn.cursor(row_factory=tuple_row).execute(sql("count_runs")).fetchone()
    return int(row[0]) if row else 0
