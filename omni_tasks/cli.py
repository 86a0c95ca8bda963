"""`omni-tasks`: every step of the platform from the command line (the DAGs call the same
functions)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Column, Table

from omni_tasks.config import get_settings
from omni_tasks.contracts import Contract
from omni_tasks.formatting import pct_ci, pts_ci

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
simulator_app = typer.Typer(
    help="The local vLLM-Omni stand-in (piper voice, planted failures).", no_args_is_help=True
)
app.add_typer(simulator_app, name="simulator")
dashboards_app = typer.Typer(help="Grafana dashboards as code.", no_args_is_help=True)
app.add_typer(dashboards_app, name="dashboards")
alerts_app = typer.Typer(help="Slack alerts: the outbox and its delivery.", no_args_is_help=True)
app.add_typer(alerts_app, name="alerts")
app.add_typer(db_app, name="db")
app.add_typer(import_app, name="import")
app.add_typer(runs_app, name="runs")
benchmarks_app = typer.Typer(help="The benchmarks omni-tasks tracks.", no_args_is_help=True)
app.add_typer(benchmarks_app, name="benchmarks")

Result = TypeVar("Result", bound=Contract)
TREND_ROWS = 14  # nights `trend` lists (all of them with --json)

# Options shared by several commands.
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output")]
TailThreshold = Annotated[
    float | None, typer.Option(help="Broken when WER > this (default: the policy's tau, 0.5)")
]
GraderOpt = Annotated[
    str | None, typer.Option(help="Use the grading by this grader id (default: the newest)")
]
BackendOpt = Annotated[
    str,
    typer.Option(
        help="ASR backend: faster-whisper (CPU/demo default), transformers (reference-harness "
        "parity, large-v3), openai-whisper"
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(help="Model: a local path, a hub id, or tiny.en (offline package; default)"),
]
PrecisionOpt = Annotated[
    str | None, typer.Option(help="int8/float32 (faster-whisper), fp32/fp16/bf16 (transformers)")
]
WindowOpt = Annotated[
    str | None,
    typer.Option(
        help="truncate30 = first 30 s (harness <= 0.28); whole-timestamps = clips over 30 s "
        "whole, with timestamps (harness 0.30, transformers); longform = the backend's own "
        "long-form decoding (diagnosis). Default: the harness version's, else truncate30"
    ),
]
HarnessOpt = Annotated[
    str | None,
    typer.Option(
        help="vllm-omni version whose reference harness the grading must match (0.26.0, 0.28.0, "
        "0.30.0): sets the transformers grader's window policy and is recorded"
    ),
]
ArtifactHarnessOpt = Annotated[
    str | None,
    typer.Option(
        help="vllm-omni version that wrote the artifacts (0.26.0, 0.28.0, 0.30.0): names the "
        "grading's window policy (artifacts carry none; unknown pairs only with unknown)"
    ),
]
BeamOpt = Annotated[int, typer.Option(help="Beam size (1 = greedy, the harness's setting)")]
BatchOpt = Annotated[int, typer.Option(help="Clips decoded per batch (speed only)")]
DeviceOpt = Annotated[str, typer.Option(help="cpu, cuda, cuda:1, …")]

console = Console()
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
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


def _keys(*texts: str) -> list[str]:
    """Run keys from what the user typed: a key or a unique prefix of one."""
    from omni_tasks.store.runs import RunNotFoundError, resolve_run_key

    conn = _open_db()
    with conn:
        try:
            return [resolve_run_key(conn, t) for t in texts]
        except RunNotFoundError as exc:
            fail(str(exc))


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


# ---------------------------------------------------------------- benchmarks
@benchmarks_app.command("list")
def benchmarks_list(as_json: JsonFlag = False) -> None:
    """Each benchmark: its id, family, per-item metric, what makes an item broken, and the
    labels its items are broken down by."""
    from omni_tasks import benchmarks

    rows = [b.describe() for b in benchmarks.all_benchmarks()]
    if as_json:
        _json_out(rows)
        return
    table = Table("id", "family", "metric", "broken when", "breakdowns")
    for r in rows:
        broken = "WER > tau" if r["judged"] == "wer" else "answer wrong"
        table.add_row(r["id"], r["family"], r["metric"], broken, ", ".join(r["breakdowns"]))
    console.print(table)


# ---------------------------------------------------------------- import
@import_app.command("vllm-omni")
def import_vllm_omni(
    files: Annotated[
        list[Path],
        typer.Argument(help="Results JSON files of `vllm bench serve` (seed-TTS, Daily-Omni...)"),
    ],
    branch: Annotated[str, typer.Option(help="Branch the artifact was produced on")],
    commit: Annotated[str | None, typer.Option(help="Commit SHA benchmarked")] = None,
    nightly: Annotated[
        str | None, typer.Option(help="Nightly date YYYY-MM-DD (default: the artifact's date)")
    ] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (one file only)")] = None,
    benchmark: Annotated[
        str | None,
        typer.Option(help="Benchmark id (see `benchmarks list`); default: detected from each file"),
    ] = None,
    replace: Annotated[
        bool, typer.Option(help="Overwrite a run key holding other content")
    ] = False,
    audio_root: Annotated[
        Path | None,
        typer.Option(
            help="Directory the artifact's audio_path files may lie in (they are copied into "
            "the audio root); other paths are stored as audio unavailable"
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            help="The seed-tts-eval locale dir the run used: fills the reference text of failure "
            "items (upstream writes none for them)"
        ),
    ] = None,
    harness_version: ArtifactHarnessOpt = None,
) -> None:
    """Import vLLM-Omni results JSON files, one run each; prints each run key. The benchmark
    (seed_tts_en/zh, daily_omni, videomme) is detected from each file's keys."""
    from omni_tasks import benchmarks
    from omni_tasks.audio import AudioUnavailable, audio_roots
    from omni_tasks.importers.vllm_omni import ArtifactError, adopt_audio
    from omni_tasks.store.runs import RunConflictError, save_run

    if run_key and len(files) > 1:
        fail("--run-key names one run; import one file at a time with it")
    from omni_tasks.names import InvalidName, check_run_key

    try:
        if run_key is not None:
            check_run_key(run_key)
    except InvalidName as exc:
        fail(str(exc))
    night = _parse_date(nightly) if nightly else None
    roots = audio_roots() + ([str(audio_root)] if audio_root else [])
    references = None
    if dataset is not None:
        from omni_tasks.dataset import DatasetError, load_dataset

        try:
            references = {u.utt_id: u.target_text for u in load_dataset(dataset).utterances}
        except DatasetError as exc:
            fail(str(exc))
    options = benchmarks.ImportOptions(
        branch=branch, commit=commit, nightly=night, audio_roots=roots, references=references,
        harness_version=harness_version,
    )  # fmt: skip
    parsed = []
    for f in files:
        try:
            art = benchmarks.import_artifact(f, options, benchmark)
            parsed.append(adopt_audio(art, str(audio_root)) if audio_root else art)
        except (ArtifactError, AudioUnavailable) as exc:
            fail(str(exc))
    conn = _open_db()
    with conn:
        for art in parsed:
            for w in art.warnings:
                err.print(f"[yellow]warning:[/] {w}", highlight=False)
            grading = (art.grader, art.grades) if art.has_clips else None
            try:
                res = save_run(conn, art.spec, art.clips, grading, run_key=run_key, replace=replace)
            except RunConflictError as exc:
                fail(str(exc))
            err.print(
                f"{res.outcome}: {art.spec.benchmark}, {len(art.clips)} items ({art.spec.status})",
                highlight=False,
            )
            sys.stdout.write(res.run_key + "\n")


def _night(conn: Any, nightly: str | None, bench: str, decided: bool, missing: str) -> dt.date:
    """The night asked for, or the latest one with runs (or, `decided`, gate decisions)."""
    from omni_tasks.store.views import latest_night

    if nightly is not None:
        return _parse_date(nightly)
    night = latest_night(conn, bench, decided=decided)
    if night is None:
        fail(missing)
    return night


def _parse_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"not a date (YYYY-MM-DD): {value!r}")


# ---------------------------------------------------------------- runs
@import_app.command("buildkite")
def import_buildkite(
    org: Annotated[str, typer.Option(help="Buildkite organization slug (e.g. vllm)")],
    pipeline: Annotated[str, typer.Option(help="Pipeline slug (e.g. vllm-omni)")],
    branch: Annotated[str | None, typer.Option(help="Only builds of this branch")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only builds created on/after YYYY-MM-DD")
    ] = None,
    base_url: Annotated[str, typer.Option(help="API base (tests: a local server)")] = (
        "https://api.buildkite.com/v2"
    ),
    harness_version: ArtifactHarnessOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Import the seed-TTS results artifacts of a Buildkite pipeline's builds (idempotent).

    The token comes from BUILDKITE_API_TOKEN (scopes read_builds, read_artifacts).
    """
    import os

    from omni_tasks.importers.buildkite import BuildkiteError, BuildkiteSource, import_pipeline

    token = os.environ.get("BUILDKITE_API_TOKEN")
    if not token:
        fail("set BUILDKITE_API_TOKEN (a Buildkite API token with read_builds, read_artifacts)")
    src = BuildkiteSource(org=org, pipeline=pipeline, token=token, base_url=base_url,
                          branch=branch, since=_parse_date(since) if since else None,
                          harness_version=harness_version)  # fmt: skip
    with _open_db() as conn:
        try:
            report = import_pipeline(conn, src)
        except BuildkiteError as exc:
            fail(str(exc))
    if as_json:
        _json_out(dataclasses.asdict(report))
        return
    for w in report.warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False)
    for e in report.errors:
        err.print(f"[red]error:[/] {e}", highlight=False)
    console.print(
        f"imported {len(report.imported)} run(s), skipped {report.skipped} already imported; "
        f"{len(report.builds_without_artifact)} build(s) without a seed-TTS artifact",
        highlight=False,
    )
    for key in report.imported:
        print(key)


@runs_app.command("list")
def runs_list(
    branch: Annotated[str | None, typer.Option(help="Only this branch")] = None,
    nightly: Annotated[str | None, typer.Option(help="Only this nightly date")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many runs")] = 200,
    as_json: JsonFlag = False,
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
    table = Table("nightly", "branch", "commit", "variant", "status", "clips", "gradings")
    # Keys are what commands take: never cut, so they can be copied (any unique prefix works).
    width = max((len(r["run_key"]) for r in rows), default=7)
    table.columns.insert(0, Column("run key", no_wrap=True, min_width=width))
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


@runs_app.command("delete")
def runs_delete(
    run_key: Annotated[str, typer.Argument(help="Run key or a unique prefix (see `runs list`)")],
    yes: Annotated[bool, typer.Option("--yes", help="Really delete (there is no undo)")] = False,
) -> None:
    """Delete a run: its clips, gradings, statistics, comparisons and stored audio. Gate
    decisions that used it keep their verdicts (their link to the run is cleared)."""
    from omni_tasks.store.runs import RunNotFoundError, delete_run, describe_run

    (key,) = _keys(run_key)
    conn = _open_db()
    with conn:
        info = describe_run(conn, key)
        what = f"{key} ({info['branch']}, {info['nightly']}, {info['n_clips']} clips)"
        if not yes:
            fail(f"would delete {what}; pass --yes to delete it")
        try:
            delete_run(conn, key)
        except RunNotFoundError as exc:
            fail(str(exc))
    console.print(f"deleted {what}", highlight=False)


@runs_app.command("show")
def runs_show(
    run_key: Annotated[str, typer.Argument(help="Run key or a unique prefix (see `runs list`)")],
    as_json: JsonFlag = False,
) -> None:
    """Show one run: provenance, clips by status, gradings."""
    from omni_tasks.store.runs import RunNotFoundError, describe_run

    (run_key,) = _keys(run_key)
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
    console.print(
        f"[bold]{'reproduce':>10}[/]: {info['reproduce']}", highlight=False, soft_wrap=True
    )


# ---------------------------------------------------------------- wer
@app.command("wer")
def wer_cmd(
    reference: Annotated[str, typer.Argument(help="Reference (target) text")],
    hypothesis: Annotated[str, typer.Argument(help="What the ASR heard")],
    system_prompt: Annotated[
        str | None, typer.Option(help="System prompt for the task-leak flag (default: §1's)")
    ] = None,
    tail_threshold: TailThreshold = None,
    lang: Annotated[
        str, typer.Option(help="en (words, lowercased) or zh (per character), as seed-tts-eval")
    ] = "en",
    as_json: JsonFlag = False,
) -> None:
    """Score one clip exactly as seed-tts-eval does, with its failure mode and flags."""
    from omni_tasks.analysis.failure_modes import diagnose
    from omni_tasks.grading import flags
    from omni_tasks.grading.wer import score
    from omni_tasks.records import ClipRecord

    try:
        result = score(reference, hypothesis, lang)
    except ValueError as exc:
        fail(str(exc))
    tau = _tau(_policy(), tail_threshold)
    prompt = flags.DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
    clip = ClipRecord(
        utt_id="-",
        reference_text=reference,
        synth_status="ok",
        grade_status="graded",
        wer=result.wer,
        ref_words=result.ref_words,
        hyp_words=result.hyp_words,
        task_leak=flags.task_leak(reference, hypothesis, prompt),
        is_question=flags.is_question(reference),
    )
    diag = diagnose(clip, tau)
    out: dict[str, Any] = result.to_dict()
    out.pop("hypothesis_norm")
    out.update(
        tau=tau,
        broken=diag is not None,
        failure_mode=diag.mode if diag else None,
        task_leak=clip.task_leak,
        is_question=clip.is_question,
        answered=bool(diag and diag.answered),
    )
    if as_json:
        _json_out(out)
        return
    console.print(
        f"WER {result.wer:.4f} (capped {result.wer_capped:.4f}); S={result.substitutions} "
        f"D={result.deletions} I={result.insertions} hits={result.hits}; "
        f"{result.ref_words} reference words, {result.hyp_words} heard",
        highlight=False,
    )
    if diag:
        flags_on = [f for f in ("task_leak", "is_question", "answered") if out[f]]
        console.print(
            f"broken at tau {tau}: {diag.mode}" + (f" ({', '.join(flags_on)})" if flags_on else ""),
            highlight=False,
        )


# ---------------------------------------------------------------- grading
def _load_grader(
    backend: str, model: str | None, precision: str | None, window: str | None, beam_size: int,
    batch_size: int, device: str, harness_version: str | None,
) -> Any:  # fmt: skip
    from omni_tasks.grading.asr import GraderConfigError, GraderSpec, load_grader
    from omni_tasks.offline_models import OfflineModelError

    spec = GraderSpec(
        backend=backend, model=model, precision=precision, window=window, beam_size=beam_size,
        batch_size=batch_size, device=device, harness_version=harness_version,
    )  # fmt: skip
    try:
        return load_grader(spec)
    except (GraderConfigError, OfflineModelError, OSError) as exc:
        fail(f"cannot load the grader: {exc}")


@app.command("grade")
def grade_cmd(
    run_key: Annotated[
        str, typer.Argument(help="Run whose stored audio to grade (key or unique prefix)")
    ],
    backend: BackendOpt = "faster-whisper",
    model: ModelOpt = None,
    precision: PrecisionOpt = None,
    window: WindowOpt = None,
    harness_version: HarnessOpt = None,
    beam_size: BeamOpt = 1,
    batch_size: BatchOpt = 8,
    device: DeviceOpt = "cpu",
    replace: Annotated[
        bool, typer.Option(help="Grade again even if this grader already graded the run")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Grade a run's stored audio into a new grading (re-grading never creates a run).

    Compare it with the original afterwards: `omni-tasks compare --baseline K --candidate K
    --baseline-grader OLD --candidate-grader NEW` (fingerprints say if they are comparable).
    """
    from omni_tasks.grading.grade import grade_run
    from omni_tasks.store.runs import RunNotFoundError

    grader = _load_grader(
        backend, model, precision, window, beam_size, batch_size, device, harness_version
    )
    (run_key,) = _keys(run_key)
    conn = _open_db()
    with conn:
        try:
            outcome = grade_run(conn, run_key, grader, replace=replace)
        except RunNotFoundError as exc:
            fail(str(exc))
    if as_json:
        _json_out(dataclasses.asdict(outcome))
        return
    verb = "graded" if outcome.created else "already graded (use --replace to grade again)"
    console.print(f"{outcome.run_key}: {verb} by [bold]{outcome.grader_id}[/]")
    console.print(
        f"  {outcome.n_graded} graded, {outcome.n_empty} empty transcripts, "
        f"{outcome.n_errors} grader errors (grading {outcome.grading_id})"
    )


# ---------------------------------------------------------------- synthesis
@app.command("bench")
def bench_cmd(
    target: Annotated[
        str, typer.Option(help="http(s)://HOST:PORT of a serving vLLM-Omni, or simulator:PROFILE")
    ],
    branch: Annotated[str, typer.Option(help="Branch the target runs (e.g. main, rebase)")],
    dataset: Annotated[
        str, typer.Option(help="demo (shipped corpus) or a seed-tts-eval locale dir")
    ] = "demo",
    commit: Annotated[str | None, typer.Option(help="Commit SHA the target runs")] = None,
    seed: Annotated[int, typer.Option(help="Run seed, sent to every stage")] = 42,
    limit: Annotated[int | None, typer.Option(help="Only the first N utterances")] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (default derived)")] = None,
    prompt_template: Annotated[
        str, typer.Option(help="seed-tts-default (the harness's) or read-aloud")
    ] = "seed-tts-default",
    transcript_mode: Annotated[
        bool, typer.Option(help="Simulator only: return what would be heard, no audio (fast)")
    ] = False,
    nightly: Annotated[str | None, typer.Option(help="Nightly date (default today, UTC)")] = None,
    variant: Annotated[str, typer.Option(help="Variant name (config overrides)")] = "default",
    concurrency: Annotated[int, typer.Option(help="Requests in flight")] = 10,
    deploy_config: Annotated[
        Path | None,
        typer.Option(
            help="The target's vLLM-Omni deploy yaml: its per-stage defaults let the run seed "
            "reach every stage (without it, an http(s) target gets no seed)"
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-request deadline, seconds")] = 900.0,
    audio_cap: Annotated[float, typer.Option(help="Stop reading after this much audio (s)")] = 60.0,
    backend: BackendOpt = "faster-whisper",
    model: ModelOpt = None,
    precision: PrecisionOpt = None,
    window: WindowOpt = None,
    harness_version: HarnessOpt = None,
    batch_size: BatchOpt = 8,
    device: DeviceOpt = "cpu",
    as_json: JsonFlag = False,
) -> None:
    """Synthesize a dataset against a target, store every clip, grade it; print the run key."""
    from omni_tasks.benchmark import BenchError, BenchRequest, run_benchmark
    from omni_tasks.dataset import DatasetError
    from omni_tasks.synthesis.profiles import ProfileError
    from omni_tasks.synthesis.stages import DeployConfigError, StageDefaults

    try:
        stages = StageDefaults.load(deploy_config) if deploy_config else None
    except DeployConfigError as exc:
        fail(str(exc))
    try:
        req = BenchRequest(
            target=target, branch=branch, dataset=dataset, commit=commit, seed=seed, limit=limit,
            run_key=run_key, prompt_template=prompt_template, transcript_mode=transcript_mode,
            nightly=_parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date(),
            variant=variant, concurrency=concurrency, timeout_s=timeout, audio_cap_s=audio_cap,
            stage_defaults=stages, harness_version=harness_version,
        )  # fmt: skip
    except BenchError as exc:
        fail(str(exc))
    if req.stages is None and seed is not None:
        err.print(
            f"[yellow]warning:[/] {target}: stage defaults unknown (pass --deploy-config), so "
            f"the run seed {seed} is not sent: each stage samples with the server's own settings",
            highlight=False,
        )
    grader = None
    if not transcript_mode:
        grader = _load_grader(
            backend, model, precision, window, 1, batch_size, device, harness_version
        )
    conn = _open_db()
    with conn:
        try:
            outcome = run_benchmark(conn, req, grader, show_progress=not as_json)
        except (BenchError, DatasetError, ProfileError, ValueError) as exc:
            fail(str(exc))
    if as_json:
        _json_out(dataclasses.asdict(outcome))
    else:
        if not outcome.synthesized:
            console.print("[dim]already stored: not synthesized again[/]")
        console.print(outcome.summary(), soft_wrap=True)
        print(outcome.run_key)
    if outcome.run_status == "failed":  # stored (nothing is lost), but not a result: exit 1
        fail(f"run {outcome.run_key} failed: {outcome.failure}")


@simulator_app.command("serve")
def simulator_serve(
    profile: Annotated[str, typer.Option(help="main, rebase or clean (profiles.yaml)")] = "main",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free one)")] = 8091,
    transcript_mode: Annotated[
        bool, typer.Option(help="Return what would be heard instead of audio")
    ] = False,
) -> None:
    """Serve the simulator in the foreground on loopback (Ctrl-C stops it)."""
    from omni_tasks.synthesis.profiles import ProfileError, load_profile
    from omni_tasks.synthesis.simulator import SimulatorConfig, serve_forever

    try:
        load_profile(profile)
    except ProfileError as exc:
        fail(str(exc))
    serve_forever(SimulatorConfig(profile, transcript_mode), port)


@simulator_app.command("profiles")
def simulator_profiles() -> None:
    """List the simulator's failure profiles and their per-clip rates."""
    from omni_tasks.synthesis.profiles import EVENTS, load_profile, profile_names

    table = Table("profile", "clips", *EVENTS)
    for name in profile_names():
        p = load_profile(name)
        for label, hard, question in (("easy", False, False), ("question", False, True),
                                      ("hard", True, False)):  # fmt: skip
            rates = p.rates(hard, question)
            table.add_row(name, label, *(f"{rates.get(e, 0.0):.3f}" for e in EVENTS))
    console.print(table)


# ---------------------------------------------------------------- dashboards
@dashboards_app.command("build")
def dashboards_build(
    check: Annotated[
        bool, typer.Option(help="Only check the committed JSON is what the code generates")
    ] = False,
) -> None:
    """Write dashboards/*.json from omni_tasks/grafana/dashboards.py."""
    from omni_tasks.grafana.dashboards import DASHBOARD_DIR, dashboards, render, write_all

    if check:

        def current(name: str, d: dict[str, Any]) -> bool:
            path = DASHBOARD_DIR / name
            return path.is_file() and path.read_text(encoding="utf-8") == render(d)

        stale = [n for n, d in dashboards().items() if not current(n, d)]
        if stale:
            fail(f"out of date: {', '.join(stale)}; run `omni-tasks dashboards build`")
        console.print("dashboards up to date")
        return
    for path in write_all():
        console.print(f"wrote {path}")


@dashboards_app.command("push")
def dashboards_push() -> None:
    """Push dashboards and new event annotations to Grafana (OMNI_GRAFANA_URL/_TOKEN)."""
    from omni_tasks.grafana.push import refresh

    with _open_db() as conn:
        console.print(refresh(conn).summary, highlight=False)


@app.command("report")
def report_cmd(
    out: Annotated[Path, typer.Option("--out", help="HTML file to write")],
    nightly: Annotated[str | None, typer.Option(help="Nightly date (default: the latest)")] = None,
    benchmark: Annotated[str | None, typer.Option(help="Benchmark")] = None,
    tail_threshold: TailThreshold = None,
) -> None:
    """One self-contained HTML report of a nightly: verdicts, trend, failure modes, per-clip
    plots and the regressed clips with their audio (for where no Grafana runs)."""
    from omni_tasks.report_html import nightly_report

    settings = get_settings()
    bench = benchmark or settings.benchmark
    tau = _tau(_policy(), tail_threshold)
    with _open_db() as conn:
        missing = f"no gated nightly stored for {bench} (run `omni-tasks gate` first)"
        night = _night(conn, nightly, bench, True, missing)
        page = nightly_report(conn, bench, night, tau)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    console.print(f"wrote {out} ({len(page) / 1e6:.1f} MB, self-contained)", highlight=False)


# ---------------------------------------------------------------- alerts
@alerts_app.command("dispatch")
def alerts_dispatch(as_json: JsonFlag = False) -> None:
    """Deliver queued alert messages: to Slack when OMNI_SLACK_TOKEN and OMNI_SLACK_CHANNEL are
    set, otherwise as Block Kit JSON files under $OMNI_HOME/outbox (printed readably)."""
    from omni_tasks.alerts.slack import default_sink, dispatch

    sink = default_sink()
    conn = _open_db()
    # With --json, stdout carries only the JSON: the local outbox's readable echo goes to stderr.
    with conn, contextlib.redirect_stdout(sys.stderr if as_json else sys.stdout):
        report = dispatch(conn, sink)
    if as_json:
        _json_out({"sink": sink.name, **dataclasses.asdict(report)})
        return
    where = "Slack" if sink.name == "slack" else f"local outbox {get_settings().outbox_dir}"
    console.print(f"alerts → {where}: {report.summary}")


def _triage(action: str, alert_id: int, note: str | None, link: str | None, by: str | None,
            as_json: bool) -> None:  # fmt: skip
    import getpass

    from omni_tasks.alerts.triage import TriageError, triage

    conn = _open_db()
    with conn:
        try:
            done = triage(conn, alert_id, action, by=by or getpass.getuser(), note=note, link=link)
        except TriageError as exc:
            fail(str(exc))
    if as_json:
        _json_out(dataclasses.asdict(done))
        return
    console.print(
        f"alert #{done.alert_id} {done.status} ({done.state}); the Slack message updates at the "
        "next `alerts dispatch`",
        highlight=False,
    )


AlertArg = Annotated[int, typer.Argument(help="Alert id (see `alerts list`)")]
NoteOpt = Annotated[str | None, typer.Option(help="Why (shown in Slack and on the dashboard)")]
LinkOpt = Annotated[str | None, typer.Option(help="A bug or PR URL to link")]
ByOpt = Annotated[str | None, typer.Option(help="Who acts (default: the login name)")]


@alerts_app.command("ack")
def alerts_ack(
    alert: AlertArg, note: NoteOpt = None, link: LinkOpt = None, by: ByOpt = None,
    as_json: JsonFlag = False,
) -> None:  # fmt: skip
    """Acknowledge an open alert: someone owns it; nightly updates continue."""
    _triage("ack", alert, note, link, by, as_json)


@alerts_app.command("invalid")
def alerts_invalid(
    alert: AlertArg, note: NoteOpt = None, link: LinkOpt = None, by: ByOpt = None,
    as_json: JsonFlag = False,
) -> None:  # fmt: skip
    """Mark an open alert invalid: it closes, and later nights of its key open a new alert
    only when the candidate runs a commit the invalid alert never covered."""
    _triage("invalid", alert, note, link, by, as_json)


@alerts_app.command("reopen")
def alerts_reopen(
    alert: AlertArg, note: NoteOpt = None, link: LinkOpt = None, by: ByOpt = None,
    as_json: JsonFlag = False,
) -> None:  # fmt: skip
    """Reopen an alert marked invalid."""
    _triage("reopen", alert, note, link, by, as_json)


@alerts_app.command("list")
def alerts_list(as_json: JsonFlag = False) -> None:
    """Alerts (open first) and the state of their messages."""
    from omni_tasks.store import alerts as alert_store

    conn = _open_db()
    with conn:
        rows = alert_store.overview(conn)
    if as_json:
        _json_out(rows)
        return
    table = Table("id", "key", "kind", "state", "triage", "opened", "last", "resolved", "msgs",
                  "undelivered")  # fmt: skip
    for r in rows:
        table.add_row(*(str(r[k]) if r[k] is not None else "" for k in r))
    console.print(table)


# ---------------------------------------------------------------- statistics
def _policy() -> Any:
    from omni_tasks.analysis.policy import PolicyError, load_policy

    try:
        return load_policy()
    except PolicyError as exc:
        fail(str(exc))


def _compute_and_show(
    compute: Callable[[Any], Result],
    show: Callable[[Console, Result], None],
    as_json: bool,
) -> None:
    """Run `compute` on the results DB; print JSON or the human rendering."""
    from omni_tasks.store.runs import RunNotFoundError

    conn = _open_db()
    with conn:
        try:
            result = compute(conn)
        except RunNotFoundError as exc:
            fail(str(exc))
    if as_json:
        _json_out(result.to_json())
    else:
        show(console, result)


def _tau(policy: Any, tail_threshold: float | None) -> float:
    if tail_threshold is not None and not (math.isfinite(tail_threshold) and tail_threshold > 0):
        fail(f"--tail-threshold must be a positive number of WER, got {tail_threshold}")
    return policy.primary_tau if tail_threshold is None else tail_threshold


@app.command("stats")
def stats_cmd(
    run_key: Annotated[str, typer.Argument(help="Run key or a unique prefix (see `runs list`)")],
    tail_threshold: TailThreshold = None,
    grader: GraderOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Gated statistics of one run (latest grading): tail fraction, capped mean, modes."""
    from omni_tasks.jobs.statistics import compute_stats_for_key
    from omni_tasks.report_text import print_stats

    policy = _policy()
    tau = _tau(policy, tail_threshold)
    (run_key,) = _keys(run_key)
    _compute_and_show(
        lambda conn: compute_stats_for_key(conn, run_key, tau, policy, grader),
        print_stats,
        as_json,
    )


@app.command("compare")
def compare_cmd(
    baseline: Annotated[str, typer.Option(help="Baseline run key (or a unique prefix)")],
    candidate: Annotated[str, typer.Option(help="Candidate run key (or a unique prefix)")],
    tail_threshold: TailThreshold = None,
    force: Annotated[
        bool, typer.Option(help="Compare even when fingerprints differ (not INFRA)")
    ] = False,
    baseline_grader: GraderOpt = None,
    candidate_grader: GraderOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Paired per-clip A/B of two runs on the same prompts, with an exact McNemar test.

    Give the same run twice with two graders to compare a re-grade with the original.
    """
    from omni_tasks.jobs.statistics import compare_keys
    from omni_tasks.report_text import print_comparison

    policy = _policy()
    tau = _tau(policy, tail_threshold)
    baseline, candidate = _keys(baseline, candidate)
    _compute_and_show(
        lambda conn: compare_keys(
            conn,
            baseline,
            candidate,
            tau,
            policy,
            force=force,
            baseline_grader=baseline_grader,
            candidate_grader=candidate_grader,
        ),
        print_comparison,
        as_json,
    )


@app.command("gate")
def gate_cmd(
    nightly: Annotated[
        str | None, typer.Option(help="Nightly date YYYY-MM-DD (default: the latest stored)")
    ] = None,
    expect: Annotated[
        list[str] | None,
        typer.Option(help="A branch that must have a run (missing = INFRA); repeatable"),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option(help="Baseline branch (default: OMNI_BASELINE_BRANCH, main)")
    ] = None,
    benchmark: Annotated[str | None, typer.Option(help="Benchmark")] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            help="For CI: exit 3 when a decision has one of these verdicts, comma-separated "
            "(regressed, infra, unknown, improved, same)"
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Gate one nightly: the baseline branch against every other branch and variant, and
    queue the Slack messages its decisions call for (`alerts dispatch` delivers them).

    Exit codes: 0 decided (and nothing matched --fail-on), 1 an error, 2 bad usage,
    3 a decision matched --fail-on."""
    from omni_tasks.jobs.nightly import decide_night

    verdicts = {"regressed", "infra", "unknown", "improved", "same"}
    wanted = {v.strip().lower() for v in (fail_on or "").split(",") if v.strip()}
    if wanted - verdicts:
        fail(f"--fail-on: unknown verdict(s) {', '.join(sorted(wanted - verdicts))}; "
             f"choose from {', '.join(sorted(verdicts))}", code=2)  # fmt: skip
    settings = get_settings()
    policy = _policy()
    bench = benchmark or settings.benchmark
    conn = _open_db()
    with conn:
        night = _night(conn, nightly, bench, False, f"no runs stored for {bench}")
        outcome = decide_night(
            conn,
            night,
            policy,
            benchmark=bench,
            baseline_branch=baseline or settings.baseline_branch,
            expect=tuple(expect or ()),
        )
        decisions = outcome.decisions
    matched = [d for d in decisions if d.verdict.lower() in wanted]
    if as_json:
        _json_out([d.to_json() for d in decisions])
    else:
        from omni_tasks.report_text import print_gate

        print_gate(console, night, decisions)
        if outcome.messages_enqueued:
            console.print(
                f"{outcome.messages_enqueued} alert message(s) queued: `omni-tasks alerts dispatch`"
            )
    if matched:
        names = ", ".join(f"{d.candidate} {d.verdict}" for d in matched)
        err.print(f"gate: {names} (--fail-on {fail_on})", highlight=False)
        raise typer.Exit(3)


@app.command("noise")
def noise_cmd(
    run_keys: Annotated[list[str], typer.Argument(help="Runs of ONE commit, different seeds")],
    tail_threshold: TailThreshold = None,
    comparisons: Annotated[int, typer.Option(help="Comparisons a night (m)")] = 1,
    as_json: JsonFlag = False,
) -> None:
    """A/A noise calibration: discordant rate psi and the detectable Δ tail (MDE)."""
    import dataclasses

    from omni_tasks.analysis.noise import calibrate
    from omni_tasks.jobs.statistics import load_graded_run

    policy = _policy()
    tau = _tau(policy, tail_threshold)
    from omni_tasks.store.runs import RunNotFoundError

    conn = _open_db()
    with conn:
        try:
            runs = [load_graded_run(conn, k).clips for k in run_keys]
        except RunNotFoundError as exc:
            fail(str(exc))
    try:
        cal = calibrate(runs, tau, policy.alpha, comparisons)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        _json_out(dataclasses.asdict(cal))
        return
    console.print(
        f"{cal.n_runs} runs x {cal.n_clips} clips at tau {cal.tau}: discordant rate "
        f"psi = {cal.psi:.4f}; MDE = {cal.mde:.4f} (80 % power, one-sided alpha "
        f"{policy.alpha}, m = {comparisons})",
        highlight=False,
    )


@app.command("trend")
def trend_cmd(
    branch: Annotated[str, typer.Option(help="Branch whose nightly series to read")],
    variant: Annotated[str, typer.Option(help="Variant")] = "default",
    metric: Annotated[
        str,
        typer.Option(
            help="tail_fraction, capped_mean_wer, or official_mean (the harness's figure; "
            "summary-only imports included, marked)"
        ),
    ] = "tail_fraction",
    benchmark: Annotated[str | None, typer.Option(help="Benchmark")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Change points on a branch's nightly series (descriptive; not used by the gate).
    Reads statistics stored by `stats`, `compare` and `gate`."""
    import dataclasses

    from omni_tasks.jobs.statistics import trend

    policy = _policy()
    conn = _open_db()
    with conn:
        try:
            series, points = trend(
                conn,
                benchmark=benchmark or get_settings().benchmark,
                branch=branch,
                variant=variant,
                metric=metric,
                policy=policy,
            )
        except ValueError as exc:
            fail(str(exc))
    if as_json:
        _json_out({"series": series, "change_points": [dataclasses.asdict(p) for p in points]})
        return
    summary_only = sum(bool(r.get("summary_only")) for r in series)
    at = "" if metric == "official_mean" else f" at tau {policy.primary_tau}"
    marked = f" ({summary_only} summary-only, marked *)" if summary_only else ""
    console.print(
        f"{branch}/{variant}: {len(series)} nights of {metric}{at}{marked}", highlight=False
    )
    for r in series[-TREND_ROWS:]:
        star = " *" if r.get("summary_only") else ""
        console.print(f"  {r['nightly']}  {r[metric]:.4f}{star}", highlight=False)
    if not points:
        console.print("no change point (minimum segment 3 nights)")
    for p in points:
        why = " (known break: an event)" if p.known_break else ""
        console.print(f"  from {p.nightly}: {p.before:.4f} -> {p.after:.4f}{why}", highlight=False)


# ---------------------------------------------------------------- demo
@app.command("demo")
def demo_cmd(
    nights: Annotated[
        int, typer.Option(min=1, max=30, help="Consecutive nightly dates (new seed each)")
    ] = 1,
    transcript_mode: Annotated[
        bool, typer.Option(help="Skip audio: the simulator returns what would be heard (fast)")
    ] = False,
) -> None:
    """Run the nightly DAG (Airflow, in-process) end to end on simulated main vs rebase."""
    from omni_tasks.alerts.blocks import render_text
    from omni_tasks.demo import BASELINE, CANDIDATE, night_summary, run_nights
    from omni_tasks.grafana.dashboards import write_all
    from omni_tasks.store import alerts as alert_store
    from omni_tasks.store.db import redact, resolve_dsn

    settings = get_settings()
    console.rule("omni-tasks demo — SIMULATED targets, real pipeline")
    console.print(
        "What is simulated: the two vLLM-Omni servers. `main` and `rebase` are the local "
        "simulator (omni_tasks/synthesis/simulator.py): it speaks each sentence of the 100-clip "
        "demo corpus with piper (a real neural TTS) and plants Qwen3-Omni's failures — reading "
        "its instructions aloud, answering questions, babbling, truncating, looping. `main` "
        "fails ≈ 8 % of clips like the real main branch; `rebase` uses the `rebase-demo` "
        "profile, whose failure rates are raised so that 100 clips show the step in one night "
        "(the real 8 → 14 % step needs ~1088 clips). Everything else is the real thing: Airflow "
        "runs the nightly DAG; Whisper tiny.en grades every clip; Postgres stores every clip; "
        "the paired exact test gates; alerts go to the Slack outbox (no token set); dashboards "
        "JSON and the HTML report are written.",
        highlight=False,
    )
    dsn = resolve_dsn()
    console.print(f"results DB: {redact(dsn)}", highlight=False)
    last = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    runs = run_nights(nights, last, transcript_mode, dsn,
                      lambda line: console.print(line, highlight=False))  # fmt: skip
    failed = [r for r in runs if r.returncode != 0]
    if failed:
        fail(f"the nightly DAG failed for {failed[0].nightly}; see {failed[0].log}")
    with _open_db() as conn:
        for r in runs:
            s = night_summary(conn, settings.benchmark, r.nightly)
            table = Table("branch", "tail fraction [95 %]", "capped mean", "mean (legacy)",
                          title=f"nightly {r.nightly} (seed {r.seed}, 100 clips each)")  # fmt: skip
            for b in s["branches"]:
                tail = pct_ci(b["tail_fraction"], (b["tail_ci_low"], b["tail_ci_high"]))
                table.add_row(b["branch"], tail, f"{b['capped_mean_wer']:.3f}",
                              f"{b['mean_wer']:.3f}")  # fmt: skip
            console.print(table)
            gate = Table("candidate vs baseline", "verdict", "reg:imp", "Δ tail [95 %]",
                         "p (Holm)", title="gate")  # fmt: skip
            for d in s["decisions"]:
                ci = (d["delta_tail_ci_low"], d["delta_tail_ci_high"])
                p_holm = d["mcnemar_p_holm"]
                verdict = d["verdict"] + (" (confirmed)" if d["confirmed"] else "")
                gate.add_row(f"{d['candidate_branch']} vs {d['baseline_branch']}", verdict,
                             f"{d['regressed']}:{d['improved']}",
                             pts_ci(d["delta_tail_fraction"], ci),
                             "" if p_holm is None else f"{p_holm:.2g}")  # fmt: skip
            console.print(gate)
        sent = alert_store.sent_messages(conn)
    dash = write_all(settings.home / "dashboards")
    posts = [m for m in sent if m["kind"] != "upload"]
    audio = [m["payload"]["file"] for m in sent if m["kind"] == "upload"]
    console.rule(f"Slack (local outbox): {len(posts)} message(s), {len(audio)} audio file(s) "
                 "in the thread")  # fmt: skip
    for m in posts:
        console.print(f"[bold]{m['kind']}[/] → {m['slack_ts']}")
        console.print(render_text(m["payload"]), highlight=False)
    for f in audio:
        console.print(f"audio in thread: {f}", highlight=False)
    console.rule("written")
    report = settings.report_path(settings.benchmark, runs[-1].nightly)
    console.print(
        f"HTML report      {report}\n"
        f"Slack outbox     {settings.outbox_dir}/\n"
        f"dashboards JSON  {', '.join(str(p) for p in dash)}\n"
        f"clip audio       {settings.audio_root_url}/\n"
        f"Airflow logs     {settings.home / 'demo'}/\n"
        f"How to read it: tail fraction = share of clips broken (WER > 0.5, no audio, or past the "
        f"60 s cap); reg:imp = clips fine on {BASELINE} and broken on {CANDIDATE} : the reverse; "
        "p = exact McNemar on them (Holm over the night); confirmed = p < 1e-4 on one night or "
        "REGRESSED two nights running — only confirmed regressions post to Slack.\n"
        "Next: `omni-tasks runs list`, `omni-tasks stats RUN_KEY`, `omni-tasks demo --nights 3`.",
        highlight=False,
    )


def main() -> None:  # pragma: no cover - console entry
    app()
