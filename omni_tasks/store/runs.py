"""Idempotent writes and small reads of runs, clips and gradings.

Writing a run key that exists with identical content is a no-op; with different content it is
an error naming what differs, unless ``replace=True``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Unpack

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.records import (
    ClipAudio,
    ClipGrade,
    ClipRecord,
    Execution,
    Grader,
    LineageFlags,
    NightRun,
    RunSpec,
    StoredRun,
)
from omni_tasks.series import Series
from omni_tasks.store.content import RunContent, content_of, describe_difference, stable_hash
from omni_tasks.store.db import SeriesFilter, filtered, one, typed, typed_one
from omni_tasks.store.queries import sql
from omni_tasks.trust.names import check_run_key, path_component
from omni_tasks.trust.redact import redact, secret_values

_JSON_FIELDS = {"lineage", "config", "stack", "execution", "summary", "source"}
R = TypeVar("R", ClipAudio, ClipGrade)


class RunConflictError(ValueError):
    """A run key already holds different content."""


class RunNotFoundError(LookupError):
    pass


@dataclass(frozen=True)
class SaveResult:
    run_key: str
    run_id: int
    outcome: Literal["created", "unchanged", "replaced"]
    grading_id: int | None = None


def derive_run_key(spec: RunSpec) -> str:
    """benchmark:nightly:branch:commit:variant:seed:prompt — readable, and unique per the
    dimensions that make a run distinct (a seed asked for but not sent reads `seed7-unsent`)."""
    commit = (spec.commit_sha or "unknown")[:12]
    seed = "none" if spec.seed is None else str(spec.seed)
    if spec.seed is None and (asked := spec.config.get("seed_requested")) is not None:
        seed = f"{asked}-unsent"  # asked for, never sent: its own key, not a seeded run's
    prompt = (spec.prompt_fingerprint or "none")[:8]
    return ":".join(
        [
            spec.series.slug,
            spec.nightly.isoformat(),
            spec.branch,
            commit,
            spec.variant,
            f"seed{seed}",
            f"p{prompt}",
        ]
    )


def save_run(
    conn: psycopg.Connection[Any],
    spec: RunSpec,
    clips: list[ClipAudio],
    grading: tuple[Grader, list[ClipGrade]] | None = None,
    *,
    run_key: str | None = None,
    replace: bool = False,
) -> SaveResult:
    """Store a run with its clips (and optionally one grading) in one transaction."""
    key = check_run_key(run_key or derive_run_key(spec))
    clips = redacted_clips(clips)  # before the content hash: it hashes what is stored
    if grading is not None:
        grading = (grading[0], redacted_grades(grading[1]))
    content = content_of(spec, clips, grading)
    digest = content.digest
    with conn.transaction():
        row = _locked_key(conn, key)
        if row is not None and row.content_hash == digest:
            gid = grading_id_of(conn, row.run_id, grading[0].grader_id) if grading else None
            return SaveResult(key, row.run_id, "unchanged", gid)
        if row is not None and not replace:
            old = load_content(conn, key, grading[0].grader_id if grading else None)
            raise RunConflictError(
                f"run {key} already exists with different content "
                f"({describe_difference(old, content)}); use --replace to overwrite it"
            )
        run_id = _insert_run(conn, row, key, spec, digest)
        copy_clip_audio(conn, run_id, clips)
        grading_id = None if grading is None else insert_grading(conn, run_id, *grading)
    return SaveResult(key, run_id, "created" if row is None else "replaced", grading_id)


def _insert_run(
    conn: psycopg.Connection[Any], old: StoredKey | None, key: str, spec: RunSpec, digest: str
) -> int:
    """The run row for `key`, the one it held before (`old`) deleted; its id."""
    if old is not None:
        conn.execute(sql("delete_run_by_id"), {"run_id": old.run_id})
    params: dict[str, object] = dataclasses.asdict(spec)
    params |= {k: Jsonb(params[k]) for k in _JSON_FIELDS}
    params |= {"run_key": key, "config_hash": stable_hash(spec.config), "content_hash": digest}
    return int(one(conn.execute(sql("insert_run"), params))["run_id"])


def _locked_key(conn: psycopg.Connection[Any], key: str) -> StoredKey | None:
    """What a run key holds, its writers serialized until the transaction ends (two retries
    cannot both insert)."""
    conn.execute(sql("lock_run_key"), {"run_key": key})
    return run_key_status(conn, key)


def _redacted(rows: list[R], fields: tuple[str, ...]) -> list[R]:
    """The rows with their text `fields` through the redaction gate (a row unchanged as is)."""
    secrets = secret_values()
    out = []
    for r in rows:
        texts = {f: t for f in fields if (t := getattr(r, f)) is not None}
        changed: dict[str, Any] = {f: s for f, t in texts.items() if (s := redact(t, secrets)) != t}
        out.append(dataclasses.replace(r, **changed) if changed else r)
    return out


def redacted_clips(clips: list[ClipAudio]) -> list[ClipAudio]:
    """The clips with the server's text (the thinker's transcript, an error's detail) through
    the redaction gate: a server may echo a token from its prompt, logs or environment, and a
    stored row is read back by reports, dashboards and alerts."""
    return _redacted(clips, ("thinker_text", "error_detail"))


def redacted_grades(grades: list[ClipGrade]) -> list[ClipGrade]:
    """The grades with their error detail (which may quote a server's answer) redacted."""
    return _redacted(grades, ("error_detail",))


def _copy(
    conn: psycopg.Connection[Any], name: str, head: int, rows: Sequence[ClipAudio | ClipGrade]
) -> None:
    """COPY rows: the run's or grading's id, then the clip row's fields in declaration order,
    the column order of copy_clip_audio.sql and copy_clip_grade.sql (a dict field, a grade's
    breakdown, as JSON)."""
    with conn.cursor() as cur, cur.copy(sql(name)) as cp:
        for row in rows:
            values = (getattr(row, f.name) for f in dataclasses.fields(row))
            cp.write_row((head, *(Jsonb(v) if isinstance(v, dict) else v for v in values)))


def copy_clip_audio(conn: psycopg.Connection[Any], run_id: int, clips: list[ClipAudio]) -> None:
    """Clip rows as given (save_run redacts them first, before their content hash)."""
    _copy(conn, "copy_clip_audio", run_id, clips)


def _grading_args(run_id: int, grader: Grader) -> dict[str, object]:
    return {"run_id": run_id, "grader_id": grader.grader_id, "grader": Jsonb(grader.description)}


def insert_grading(
    conn: psycopg.Connection[Any], run_id: int, grader: Grader, grades: list[ClipGrade]
) -> int:
    grading_id = int(
        one(conn.execute(sql("insert_grading"), _grading_args(run_id, grader)))["grading_id"]
    )
    copy_clip_grades(conn, grading_id, grades)
    return grading_id


def copy_clip_grades(
    conn: psycopg.Connection[Any], grading_id: int, grades: list[ClipGrade]
) -> None:
    _copy(conn, "copy_clip_grade", grading_id, redacted_grades(grades))


def start_run(conn: psycopg.Connection[Any], run_key: str, spec: RunSpec) -> tuple[int, bool]:
    """The run row a pipelined run writes clip by clip: (run_id, resumed). A run left
    `running` by a crash is resumed (its stored clips kept); a partial or failed one is
    replaced; the content hash is set when the last clip is stored (finish_run)."""
    key = check_run_key(run_key)
    with conn.transaction():
        row = _locked_key(conn, key)
        if row is not None and row.status == "running":
            return row.run_id, True
        running = dataclasses.replace(spec, status="running")
        return _insert_run(conn, row, key, running, "pending"), False


def insert_clip_audio(conn: psycopg.Connection[Any], run_id: int, clip: ClipAudio) -> None:
    """One clip, as a pipelined run stores it (its server text redacted)."""
    (clip,) = redacted_clips([clip])
    conn.execute(sql("insert_clip_audio"), {"run_id": run_id, **dataclasses.asdict(clip)})


def stored_clips(conn: psycopg.Connection[Any], run_id: int) -> list[ClipAudio]:
    """A run's stored clips in dataset order."""
    return [ClipAudio(**r) for r in conn.execute(sql("clip_audio_of_run"), {"run_id": run_id})]


def finish_run(
    conn: psycopg.Connection[Any], run_id: int, spec: RunSpec, clips: list[ClipAudio]
) -> None:
    digest = content_of(spec, clips, None).digest
    conn.execute(
        sql("finish_run"), {"run_id": run_id, "status": spec.status, "content_hash": digest}
    )


def open_grading(conn: psycopg.Connection[Any], run_id: int, grader: Grader) -> tuple[int, str]:
    """(grading_id, status): a new `running` grading, or the existing one of that grader."""
    row = one(conn.execute(sql("open_grading"), _grading_args(run_id, grader)))
    return int(row["grading_id"]), str(row["status"])


def graded_utts(conn: psycopg.Connection[Any], grading_id: int) -> set[str]:
    return {r["utt_id"] for r in conn.execute(sql("graded_utts"), {"grading_id": grading_id})}


def finish_grading(conn: psycopg.Connection[Any], grading_id: int) -> None:
    conn.execute(sql("finish_grading"), {"grading_id": grading_id})


def grading_of(
    conn: psycopg.Connection[Any], run_id: int, grader_id: str
) -> tuple[int, str] | None:
    """(grading_id, status) of a run's grading by `grader_id`, if any."""
    row = conn.execute(
        sql("grading_by_grader"), {"run_id": run_id, "grader_id": grader_id}
    ).fetchone()
    return None if row is None else (int(row["grading_id"]), str(row["status"]))


def grading_id_of(conn: psycopg.Connection[Any], run_id: int, grader_id: str) -> int | None:
    found = grading_of(conn, run_id, grader_id)
    return None if found is None else found[0]


def get_run(conn: psycopg.Connection[Any], run_key: str) -> StoredRun:
    row = typed_one(conn, StoredRun, "run_by_key", run_key=run_key)
    if row is None:
        raise RunNotFoundError(f"no run with key {run_key!r} (see `omni-tasks runs list`)")
    return row


def resolve_run_key(conn: psycopg.Connection[Any], text: str) -> str:
    """The run key a user means: the key itself, or the one key that starts with `text`."""
    rows = conn.execute(sql("run_keys_by_prefix"), {"text": text}).fetchall()
    if not rows:
        raise RunNotFoundError(f"no run with key {text!r} (see `omni-tasks runs list`)")
    if rows[0]["exact"] or len(rows) == 1:
        return str(rows[0]["run_key"])
    shown = ", ".join(r["run_key"] for r in rows[:5]) + (", …" if len(rows) > 5 else "")
    raise RunNotFoundError(f"{text!r} is the start of several run keys: {shown}; type more of it")


def delete_run(conn: psycopg.Connection[Any], run_key: str) -> None:
    """Delete a run's rows (one transaction), then its stored audio folder."""
    import fsspec

    with conn.transaction():
        if conn.execute(sql("delete_run"), {"run_key": run_key}).fetchone() is None:
            raise RunNotFoundError(f"no run with key {run_key!r} (see `omni-tasks runs list`)")
    folder = f"{get_settings().audio_root_url}/{path_component(run_key)}"
    fs, path = fsspec.core.url_to_fs(folder)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def load_content(conn: psycopg.Connection[Any], run_key: str, grader_id: str | None) -> RunContent:
    row = get_run(conn, run_key)
    grading = None
    gid = grading_id_of(conn, row.run_id, grader_id) if grader_id else None
    if gid is not None and grader_id is not None:
        rows = conn.execute(sql("clip_grade_rows"), {"grading_id": gid})
        grading = (Grader(grader_id), [ClipGrade(**r) for r in rows])
    return content_of(row.spec, stored_clips(conn, row.run_id), grading)


def list_runs(
    conn: psycopg.Connection[Any],
    *,
    nightly: dt.date | None = None,
    limit: int = 200,
    **series: Unpack[SeriesFilter],
) -> list[dict[str, Any]]:
    params = filtered(series, nightly=nightly, limit=limit)
    return [dict(r) for r in conn.execute(sql("list_runs"), params)]


@dataclass(frozen=True)
class GradingInfo:
    grading_id: int
    grader_id: str
    n_grades: int
    status: str
    grader: JsonObject  # how it grades (backend, model, window…): what reproduces it


@dataclass(frozen=True)
class RunDescription:
    """A stored run as `runs show` reports it (the CLI adds the command that reproduces it)."""

    run_key: str
    benchmark: str
    model: str
    lane: str
    branch: str
    commit: str | None
    nightly: str
    variant: str
    seed: int | None
    trigger: str
    status: str
    n_expected: int
    n_clips: int
    clips_by_status: dict[str, int]
    gradings: list[GradingInfo]
    config: JsonObject
    lineage: LineageFlags
    stack: JsonObject
    execution: Execution
    dataset_fingerprint: str | None
    prompt_fingerprint: str | None
    summary: JsonObject
    source: JsonObject


def describe_run(conn: psycopg.Connection[Any], run_key: str) -> RunDescription:
    row = get_run(conn, run_key)
    by_status = clips_by_status(conn, row.run_id)
    names = {f.name for f in dataclasses.fields(RunDescription)}
    same = {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.name in names}
    return RunDescription(
        **{
            **same,
            "commit": row.commit_sha,
            "nightly": row.nightly.isoformat(),
            "n_clips": sum(by_status.values()),
            "clips_by_status": by_status,
            "gradings": gradings_of(conn, row.run_id),
            "config": row.config or {},
            "stack": row.stack or {},
            "source": row.source or {},
        }
    )


def latest_grading(
    conn: psycopg.Connection[Any], run_id: int, run_key: str, grader_id: str | None = None
) -> tuple[int, str]:
    """(grading_id, grader_id) the statistics read: the newest grading, or the one by
    `grader_id` (after a re-grade, say which grader you mean)."""
    row = conn.execute(
        sql("latest_complete_grading"), {"run_id": run_id, "grader_id": grader_id}
    ).fetchone()
    if row is None:
        if grader_id is not None:
            known = [g.grader_id for g in gradings_of(conn, run_id)]
            raise RunNotFoundError(
                f"run {run_key} has no grading by {grader_id}; its gradings: {known or 'none'}"
            )
        running = [g.grader_id for g in gradings_of(conn, run_id) if g.status == "running"]
        if running:
            raise RunNotFoundError(
                f"run {run_key}: its grading by {running[0]} is not complete (still running, or "
                "interrupted: re-run the task or `omni-tasks grade` to finish it)"
            )
        raise RunNotFoundError(f"run {run_key} has no grading yet (run `omni-tasks grade`)")
    return int(row["grading_id"]), str(row["grader_id"])


def gradings_of(conn: psycopg.Connection[Any], run_id: int) -> list[GradingInfo]:
    """A run's gradings, oldest first."""
    return [
        GradingInfo(g["grading_id"], g["grader_id"], g["n_grades"], g["status"], g["grader"])
        for g in conn.execute(sql("gradings_of_run"), {"run_id": run_id})
    ]


def grade_counts(conn: psycopg.Connection[Any], grading_id: int) -> tuple[int, int, int]:
    """(graded, empty_transcript, grader_error) clip counts of a grading."""
    row = one(conn.execute(sql("grade_counts"), {"grading_id": grading_id}))
    return int(row["graded"]), int(row["empty"]), int(row["errors"])


def delete_grading(conn: psycopg.Connection[Any], grading_id: int) -> None:
    conn.execute(sql("delete_grading"), {"grading_id": grading_id})


def clip_records(conn: psycopg.Connection[Any], grading_id: int) -> list[ClipRecord]:
    run = conn.execute(sql("grading_run"), {"grading_id": grading_id}).fetchone()
    if run is None:
        return []
    args = {"grading_id": grading_id, "run_id": run["run_id"]}
    return [ClipRecord(**r) for r in conn.execute(sql("clip_records"), args)]


def runs_of_night(
    conn: psycopg.Connection[Any], series: Series, nightly: dt.date
) -> list[NightRun]:
    """A series' runs of a night, each with the grader that reproduces it."""
    return typed(conn, NightRun, "runs_of_night", **series.args(), nightly=nightly)


def has_fresh_run(conn: psycopg.Connection[Any], series: Series, branch: str, nightly: Any) -> bool:
    """Whether `branch` has a complete run of the series for `nightly`."""
    args = {**series.args(), "branch": branch, "nightly": nightly}
    return conn.execute(sql("fresh_run"), args).fetchone() is not None


def endpoint_run(
    conn: psycopg.Connection[Any],
    series: Series,
    variant: str,
    commit: str,
    dataset_fingerprint: str,
) -> dict[str, Any] | None:
    """A commit's newest complete nightly (or backfill) run of the series on that dataset and
    subset, with its newest complete grading; None when there is none."""
    args = {
        **series.args(),
        "variant": variant,
        "commit": commit,
        "dataset_fingerprint": dataset_fingerprint,
    }
    row = conn.execute(sql("endpoint_run"), args).fetchone()
    return None if row is None else dict(row)


def imported_buildkite_artifact(conn: psycopg.Connection[Any], artifact_id: str) -> bool:
    args = {"artifact_id": artifact_id}
    return conn.execute(sql("imported_buildkite_artifact"), args).fetchone() is not None


@dataclass(frozen=True)
class StoredKey:
    """What a run key holds, if stored (run_key_status.sql)."""

    run_id: int
    status: str  # running | complete | partial | failed
    content_hash: str | None


def run_key_status(conn: psycopg.Connection[Any], run_key: str) -> StoredKey | None:
    return typed_one(conn, StoredKey, "run_key_status", run_key=run_key)


def clips_by_status(conn: psycopg.Connection[Any], run_id: int) -> dict[str, int]:
    rows = conn.execute(sql("clips_by_status"), {"run_id": run_id})
    return {r["synth_status"]: int(r["n"]) for r in rows}
