"""What every command group shares: the Typer apps, option types, the results DB, errors and
output."""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, NoReturn, TypeVar

import typer
from rich.console import Console

from omni_tasks.contracts import Contract
from omni_tasks.harness import HARNESS

# Help is Markdown: a docstring's paragraphs are rewrapped to the terminal (Rich mode keeps a
# docstring's line breaks after its first paragraph, so sentences break mid-line at 80 columns).
HELP_MARKUP: Final = "markdown"

app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Nightly accuracy-regression tracking for omni (speech-out) models served by "
    "vLLM-Omni: seed-TTS, Daily-Omni, Video-MME, LibriSpeech and more, per item, per series.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from omni_tasks import __version__

        sys.stdout.write(f"omni-tasks {__version__}\n")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit"
        ),
    ] = False,
) -> None:
    """Nightly accuracy-regression tracking for omni (speech-out) models served by vLLM-Omni."""


db_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="The results database (embedded Postgres unless OMNI_DATABASE_URL).",
    no_args_is_help=True,
)
import_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Import results produced elsewhere.", no_args_is_help=True
)
runs_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Inspect stored runs.", no_args_is_help=True
)
simulator_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="The local vLLM-Omni stand-in (piper voice, planted failures).",
    no_args_is_help=True,
)
app.add_typer(simulator_app, name="simulator")
dashboards_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Grafana dashboards as code.", no_args_is_help=True
)
app.add_typer(dashboards_app, name="dashboards")
alerts_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Slack alerts: the outbox and its delivery.",
    no_args_is_help=True,
)
app.add_typer(alerts_app, name="alerts")
app.add_typer(db_app, name="db")
app.add_typer(import_app, name="import")
app.add_typer(runs_app, name="runs")
benchmarks_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="The benchmarks omni-tasks tracks.", no_args_is_help=True
)
audio_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Stored clip audio: retention.", no_args_is_help=True
)
app.add_typer(audio_app, name="audio")
app.add_typer(benchmarks_app, name="benchmarks")
doctor_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Check this host's setup.", no_args_is_help=True
)
app.add_typer(doctor_app, name="doctor")

Result = TypeVar("Result", bound=Contract)
TREND_ROWS = 14  # nights `trend` lists (all of them with --json)

# Options shared by several commands.
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output")]
# A benchmark family's run option is the flag of its name, hyphenated (Benchmark.options):
# `--transcript-mode` gives seed-TTS's option TRANSCRIPT.
TRANSCRIPT_FLAG = "--transcript-mode"
TRANSCRIPT = TRANSCRIPT_FLAG[2:].replace("-", "_")
TranscriptOpt = Annotated[
    bool, typer.Option(TRANSCRIPT_FLAG, help="Simulator only: what would be heard, no audio (fast)")
]


def run_options(given: Mapping[str, object]) -> dict[str, object]:
    """The family run options of the flags that were set (one left unset gives none)."""
    return {name: v for name, v in given.items() if v not in (None, False)}


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
    typer.Option(
        metavar="MODEL",
        help="Model: a local path, a hub id, or tiny.en (offline package; default)",
    ),
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
        help="vllm-omni version whose reference harness the grading must match "
        f"({', '.join(HARNESS)}): sets the transformers grader's window policy and the "
        "client's rules, and is recorded"
    ),
]
ArtifactHarnessOpt = Annotated[
    str | None,
    typer.Option(
        help=f"vllm-omni version that wrote the artifacts ({', '.join(HARNESS)}): names the "
        "grading's window policy (artifacts carry none; unknown pairs only with unknown)"
    ),
]
BeamOpt = Annotated[int, typer.Option(help="Beam size (1 = greedy, the harness's setting)")]
BatchOpt = Annotated[int, typer.Option(help="Clips decoded per batch (speed only)")]
DeviceOpt = Annotated[str, typer.Option(help="cpu, cuda, cuda:1, …")]

console = Console()
err = Console(stderr=True, soft_wrap=True)


WideFlag = Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal")]
BenchmarkOpt = Annotated[
    str | None, typer.Option(metavar="BENCHMARK", help="Benchmark (default: OMNI_BENCHMARK)")
]
ServedModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="The series' model (default: Qwen/Qwen3-Omni-30B-A3B-Instruct)",
    ),
]
LaneOpt = Annotated[
    str | None, typer.Option(metavar="LANE", help="The series' hardware lane (default: `default`)")
]


def series_of(benchmark: str | None, model: str | None, lane: str | None) -> Any:
    """The series a command reads (model × benchmark × lane), each part defaulted."""
    from omni_tasks.config import get_settings
    from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series

    try:
        return Series(
            benchmark or get_settings().benchmark, model or DEFAULT_MODEL, lane or DEFAULT_LANE
        )
    except ValueError as exc:
        fail(str(exc), code=2)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


def json_out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def open_db(migrate: bool = True) -> Any:
    from omni_tasks.store.db import DatabaseError, connect
    from omni_tasks.store.migrate import migrate as run_migrations

    try:
        conn = connect()
        if migrate:
            run_migrations(conn)
    except DatabaseError as exc:
        fail(str(exc))
    return conn


def run_keys_of(*texts: str) -> list[str]:
    """Run keys from what the user typed: a key or a unique prefix of one."""
    from omni_tasks.store.runs import RunNotFoundError, resolve_run_key

    conn = open_db()
    with conn:
        try:
            return [resolve_run_key(conn, t) for t in texts]
        except RunNotFoundError as exc:
            fail(str(exc))


def night_of(
    conn: Any,
    nightly: str | None,
    bench: Any,
    decided: bool,
    missing: str,
    *,
    require_runs: bool = True,
) -> dt.date:
    """The night asked for, or the latest one with runs (or, `decided`, gate decisions). A
    series with no runs that night is an error that names the series that have runs (a fleet
    night's command defaults to the default model and lane); `require_runs=False` lets a gate
    that expects branches decide a night with none (INFRA)."""
    from omni_tasks.store import views

    if nightly is not None:
        night = parse_date(nightly)
        if require_runs and not views.series_has_night(conn, bench, night):
            others = views.series_on_night(conn, night)
            hint = (
                "; series with runs that night: "
                + ", ".join(s.label for s in others)
                + " (choose one with --benchmark, --model, --lane)"
                if others
                else "; no series has runs that night"
            )
            fail(f"no runs of {bench.label} on {night}{hint}")
        return night
    latest = views.latest_night(conn, bench, decided=decided)
    if latest is None:
        stored = views.series_with_runs(conn)
        hint = (
            "; series with runs: " + ", ".join(f"{s.label} (latest {d})" for s, d in stored)
            if stored
            else ""
        )
        fail(missing + hint)
    return latest


def parse_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"not a date (YYYY-MM-DD): {value!r}")


def load_policy_or_fail() -> Any:
    from omni_tasks.gates.policy import PolicyError, load_policy

    try:
        return load_policy()
    except PolicyError as exc:
        fail(str(exc))


def compute_and_show(
    compute: Callable[[Any], Result],
    show: Callable[[Console, Result], None],
    as_json: bool,
) -> None:
    """Run `compute` on the results DB; print JSON or the human rendering."""
    from omni_tasks.store.runs import RunNotFoundError

    conn = open_db()
    with conn:
        try:
            result = compute(conn)
        except RunNotFoundError as exc:
            fail(str(exc))
    if as_json:
        json_out(result.to_json())
    else:
        show(console, result)


def tau_or_default(policy: Any, tail_threshold: float | None) -> float:
    if tail_threshold is not None and not (math.isfinite(tail_threshold) and tail_threshold > 0):
        fail(f"--tail-threshold must be a positive number of WER, got {tail_threshold}")
    return policy.primary_tau if tail_threshold is None else tail_threshold


def load_grader_or_fail(
    backend: str,
    model: str | None,
    precision: str | None,
    window: str | None,
    beam_size: int,
    batch_size: int,
    device: str,
    harness_version: str | None,
) -> Any:
    from omni_tasks.grading.asr import GraderConfigError, GraderSpec
    from omni_tasks.grading.backends import load_grader
    from omni_tasks.offline_models import OfflineModelError

    try:
        spec = GraderSpec.from_params(
            {
                "backend": backend,
                "model": model,
                "precision": precision,
                "window": window,
                "beam_size": beam_size,
                "batch_size": batch_size,
                "device": device,
                "harness_version": harness_version,
            }
        )
        return load_grader(spec)
    except (GraderConfigError, OfflineModelError, OSError) as exc:
        fail(f"cannot load the grader: {exc}")
