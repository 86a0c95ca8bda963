"""`omni-tasks`: every step of the platform from the command line (the DAGs call the same
functions)."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from omni_tasks.config import get_settings

app = typer.Typer(
    help="Nightly accuracy-regression tracking for omni (speech-out) models (seed-TTS WER).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(
    help="The results database (embedded Postgres unless OMNI_DATABASE_URL).", no_args_is_help=True
)
import_app = typer.Typer(help="Import results produced elsewhere.", no_args_is_help=True)
runs_app = typer.Typer(help="Inspect stored runs.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(import_app, name="import")
app.add_typer(runs_app, name="runs")

console = Console()
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


def _json_out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def _open_db(migrate: bool = True) -> Any:
    from omni_tasks.store.db import DatabaseError, connect
    from omni_tasks.store.migrate import migrate as run_migrations

    try:
        conn = connect()
        if migrate:
            run_migrations(conn)
    except DatabaseError as exc:
        fail(str(exc))
    return conn


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

    conn = _open_db(migrate=False)
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


# ---------------------------------------------------------------- import
@import_app.command("vllm-omni")
def import_vllm_omni(
    files: Annotated[list[Path], typer.Argument(help="qwen_omni_acc_seed_tts_*.json artifacts")],
    branch: Annotated[str, typer.Option(help="Branch the artifact was produced on")],
    commit: Annotated[str | None, typer.Option(help="Commit SHA benchmarked")] = None,
    nightly: Annotated[
        str | None, typer.Option(help="Nightly date YYYY-MM-DD (default: the artifact's date)")
    ] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (one file only)")] = None,
    benchmark: Annotated[str, typer.Option(help="Benchmark name")] = "seed_tts_en",
    replace: Annotated[
        bool, typer.Option(help="Overwrite a run key holding other content")
    ] = False,
) -> None:
    """Import vLLM-Omni seed-TTS results JSON files, one run each; prints each run key."""
    from omni_tasks.importers.vllm_omni import ARTIFACT_GRADER, ArtifactError, parse_artifact
    from omni_tasks.store.runs import RunConflictError, save_run

    if run_key and len(files) > 1:
        fail("--run-key names one run; import one file at a time with it")
    night = _parse_date(nightly) if nightly else None
    parsed = []
    for f in files:
        try:
            parsed.append(
                parse_artifact(f, branch=branch, benchmark=benchmark, commit=commit, nightly=night)
            )
        except ArtifactError as exc:
            fail(str(exc))
    conn = _open_db()
    with conn:
        for art in parsed:
            for w in art.warnings:
                err.print(f"[yellow]warning:[/] {w}", highlight=False)
            grading = (ARTIFACT_GRADER, art.grades) if art.has_clips else None
            try:
                res = save_run(conn, art.spec, art.clips, grading, run_key=run_key, replace=replace)
            except RunConflictError as exc:
                fail(str(exc))
            err.print(f"{res.outcome}: {len(art.clips)} clips ({art.spec.status})", highlight=False)
            sys.stdout.write(res.run_key + "\n")


def _parse_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"not a date (YYYY-MM-DD): {value!r}")
        raise


# ---------------------------------------------------------------- runs
@runs_app.command("list")
def runs_list(
    branch: Annotated[str | None, typer.Option(help="Only this branch")] = None,
    nightly: Annotated[str | None, typer.Option(help="Only this nightly date")] = None,
    limit: Annotated[int, typer.Option(help="At most this many runs")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """List stored runs, newest nightly first."""
    from omni_tasks.store.runs import list_runs

    conn = _open_db()
    with conn:
        rows = list_runs(
            conn, branch=branch, nightly=_parse_date(nightly) if nightly else None, limit=limit
        )
    if as_json:
        _json_out(rows)
        return
    table = Table(
        "run key", "nightly", "branch", "commit", "variant", "status", "clips", "gradings"
    )
    for r in rows:
        table.add_row(
            r["run_key"],
            str(r["nightly"]),
            r["branch"],
            (r["commit_sha"] or "?")[:12],
            r["variant"],
            r["status"],
            f"{r['n_clips']}/{r['n_expected']}",
            str(r["n_gradings"]),
        )
    console.print(table)


@runs_app.command("show")
def runs_show(
    run_key: Annotated[str, typer.Argument(help="Run key (see `runs list`)")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Show one run: provenance, clips by status, gradings."""
    from omni_tasks.store.runs import RunNotFoundError, describe_run

    conn = _open_db()
    with conn:
        try:
            info = describe_run(conn, run_key)
        except RunNotFoundError as exc:
            fail(str(exc))
    if as_json:
        _json_out(info)
        return
    for k in (
        "run_key",
        "benchmark",
        "nightly",
        "branch",
        "commit",
        "variant",
        "seed",
        "trigger",
        "status",
    ):
        console.print(f"[bold]{k:>10}[/]: {info[k]}", highlight=False)
    console.print(
        f"[bold]{'clips':>10}[/]: {info['n_clips']} of {info['n_expected']} "
        f"{info['clips_by_status']}",
        highlight=False,
    )
    for g in info["gradings"]:
        console.print(
            f"[bold]{'grading':>10}[/]: #{g['grading_id']} {g['grader_id']} "
            f"({g['n_grades']} grades)",
            highlight=False,
        )


# ---------------------------------------------------------------- wer
@app.command("wer")
def wer_cmd(
    reference: Annotated[str, typer.Argument(help="Reference (target) text")],
    hypothesis: Annotated[str, typer.Argument(help="What the ASR heard")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Score one clip exactly as seed-tts-eval does."""
    from omni_tasks.grading.wer import score

    try:
        result = score(reference, hypothesis)
    except ValueError as exc:
        fail(str(exc))
    out = result.to_dict()
    out.pop("hypothesis_norm")
    if as_json:
        _json_out(out)
        return
    console.print(
        f"WER {result.wer:.4f} (capped {result.wer_capped:.4f}); S={result.substitutions} "
        f"D={result.deletions} I={result.insertions} hits={result.hits}; "
        f"{result.ref_words} reference words, {result.hyp_words} heard",
        highlight=False,
    )


def main() -> None:  # pragma: no cover - console entry
    app()
