"""What commands share before they do their work: the options (declared once, so a flag reads
the same in every command that takes it) and the preamble (the series, the night, the policy,
the grader and the results DB a command runs on)."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import typer

from omni_tasks.cli.common import Result, console, fail, json_out, parse_date, say
from omni_tasks.harness import HARNESS

T = TypeVar("T")
Params = TypeVar("Params")

# ---------------------------------------------------------------- output
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output")]
WideFlag = Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal")]

# ---------------------------------------------------------------- the series and its runs
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
TargetOpt = Annotated[
    str,
    typer.Option(
        metavar="TARGET", help="http(s)://HOST:PORT of a serving vLLM-Omni, or simulator:PROFILE"
    ),
]
CommitOpt = Annotated[str | None, typer.Option(metavar="SHA", help="The commit the target serves")]
CandidateOpt = Annotated[str, typer.Option(metavar="BRANCH", help="The candidate branch")]
BaselineOpt = Annotated[str, typer.Option(metavar="BRANCH", help="The baseline branch")]
VariantOpt = Annotated[str, typer.Option(metavar="VARIANT", help="Variant")]
DatasetOpt = Annotated[str, typer.Option(metavar="DIR", help="demo or the series' dataset root")]
SeriesDatasetOpt = Annotated[
    str | None, typer.Option(metavar="DIR", help="demo or a root (default: the configured series')")
]
LimitOpt = Annotated[int | None, typer.Option(help="Only the first N items")]
NightlyOpt = Annotated[
    str | None,
    typer.Option(metavar="DATE", help="The night its runs are stored under (default: today, UTC)"),
]
AlertThreadOpt = Annotated[
    int | None, typer.Option(help="Reply in this alert's thread (default: the key's open one)")
]
RunKeyArg = Annotated[str, typer.Argument(help="Run key or a unique prefix (see `runs list`)")]
# Filters of a listing (`runs list`, `alerts list`).
OnlyBenchmark = Annotated[str | None, typer.Option(metavar="BENCHMARK", help="Only this benchmark")]
OnlyModel = Annotated[str | None, typer.Option(metavar="MODEL", help="Only this model")]
OnlyLane = Annotated[str | None, typer.Option(metavar="LANE", help="Only this hardware lane")]
OnlyBranch = Annotated[str | None, typer.Option(metavar="BRANCH", help="Only this branch")]

# A benchmark family's run option is the flag of its name, hyphenated (Benchmark.options):
# `--transcript-mode` gives seed-TTS's option TRANSCRIPT.
TRANSCRIPT_FLAG = "--transcript-mode"
TRANSCRIPT = TRANSCRIPT_FLAG[2:].replace("-", "_")
TranscriptOpt = Annotated[
    bool, typer.Option(TRANSCRIPT_FLAG, help="Simulator only: what would be heard, no audio (fast)")
]

# ---------------------------------------------------------------- statistics and grading
TailThreshold = Annotated[
    float | None, typer.Option(help="Broken when WER > this (default: the policy's tau, 0.5)")
]
GraderOpt = Annotated[
    str | None,
    typer.Option(metavar="GRADER", help="Use the grading by this grader id (default: the newest)"),
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


# ---------------------------------------------------------------- the preamble
@contextlib.contextmanager
def fails_on(*errors: type[Exception], what: str = "", code: int = 1) -> Iterator[None]:
    """One of `errors` in the block fails the command with its message (after `what: `)."""
    try:
        yield
    except errors as exc:
        fail(f"{what}: {exc}" if what else str(exc), code)


def run_options(given: Mapping[str, object]) -> dict[str, object]:
    """The family run options of the flags that were set (one left unset gives none)."""
    return {name: v for name, v in given.items() if v not in (None, False)}


def series_of(
    benchmark: str | None, model: str | None, lane: str | None, *, named: str | None = None
) -> Any:
    """The series a command reads (model × benchmark × lane), each part defaulted, or the one
    --series names as BENCHMARK|MODEL|LANE."""
    from omni_tasks.config import get_settings
    from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series

    if named is not None:
        with fails_on(ValueError, what="--series", code=2):
            return Series.parse(named)
    with fails_on(ValueError, code=2):
        return Series(
            benchmark or get_settings().benchmark, model or DEFAULT_MODEL, lane or DEFAULT_LANE
        )


def series_fields(
    benchmark: str | None, model: str | None, lane: str | None, transcript: bool
) -> dict[str, object]:
    """A job's series and run options, as its params (a form's fields) spell them."""
    from omni_tasks.series import DEFAULT_LANE

    return {
        "benchmark": benchmark,
        "lane": lane or DEFAULT_LANE,
        **run_options({TRANSCRIPT: transcript}),
        **({"server": {"model": model}} if model else {}),
    }


def validated(build: Callable[..., Params], what: str, /, **fields: object) -> Params:
    """A job's request or params built from the command's fields; a field it refuses (a
    ValueError: a pydantic ValidationError is one) is bad usage (exit 2)."""
    with fails_on(ValueError, what=what, code=2):
        return build(**fields)


def fail_on_verdicts(given: Sequence[str], verdicts: Sequence[str]) -> set[str]:
    """The verdicts --fail-on names, lowercased (each value may list several, comma-separated);
    one not among `verdicts` is bad usage (exit 2)."""
    wanted = {v.strip().lower() for g in given for v in g.split(",") if v.strip()}
    if bad := wanted - set(verdicts):
        fail(
            f"--fail-on: unknown verdict(s) {', '.join(sorted(bad))}; "
            f"choose from {', '.join(verdicts)}",
            code=2,
        )
    return wanted


def exit_on_verdicts(command: str, matched: Sequence[str], given: Sequence[str]) -> None:
    """Exit 3 naming what matched --fail-on, when anything did (CI's signal)."""
    if matched:
        say(f"{command}: {', '.join(matched)} (--fail-on {','.join(given)})")
        raise typer.Exit(3)


def night_or_today(nightly: str | None) -> dt.date:
    return parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date()


def open_db(migrate: bool = True) -> Any:
    from omni_tasks.store.db import DatabaseError, connect
    from omni_tasks.store.migrate import migrate as run_migrations

    with fails_on(DatabaseError):
        conn = connect()
        if migrate:
            run_migrations(conn)
    return conn


def on_db(
    work: Callable[[Any], T],
    *errors: type[Exception],
    migrate: bool = True,
    dispatch: bool = False,
) -> T:
    """`work` on the results DB, in one transaction; one of `errors` fails the command with its
    message (exit 1). With `dispatch`, the alert messages it queued are delivered after it
    (Slack when configured, else the local outbox, whose echo goes to stderr: stdout keeps
    only the command's output)."""
    conn = open_db(migrate)
    with conn:
        with fails_on(*errors):
            done = work(conn)
        if dispatch:
            import sys

            from omni_tasks.alerts.slack import default_sink
            from omni_tasks.alerts.slack import dispatch as deliver

            with contextlib.redirect_stdout(sys.stderr):
                deliver(conn, default_sink())
    return done


def run_keys_of(*texts: str) -> list[str]:
    """Run keys from what the user typed: a key or a unique prefix of one."""
    from omni_tasks.store.runs import RunNotFoundError, resolve_run_key

    return on_db(lambda conn: [resolve_run_key(conn, t) for t in texts], RunNotFoundError)


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


def load_policy_or_fail() -> Any:
    from omni_tasks.gates.policy import PolicyError, load_policy

    with fails_on(PolicyError):
        return load_policy()


def policy_and_tau(tail_threshold: float | None) -> tuple[Any, float]:
    """The gate policy, and the tau a clip is broken above (--tail-threshold, else the
    policy's)."""
    policy = load_policy_or_fail()
    if tail_threshold is not None and not (math.isfinite(tail_threshold) and tail_threshold > 0):
        fail(f"--tail-threshold must be a positive number of WER, got {tail_threshold}")
    return policy, policy.primary_tau if tail_threshold is None else tail_threshold


def compute_and_show(
    compute: Callable[[Any], Result],
    show: Callable[[Any, Result], None],
    as_json: bool,
) -> None:
    """Run `compute` on the results DB; print JSON or the human rendering."""
    from omni_tasks.store.runs import RunNotFoundError

    result = on_db(compute, RunNotFoundError)
    if as_json:
        json_out(result.to_json())
    else:
        show(console, result)


def load_grader_or_fail(**spec: object) -> Any:
    """The grader the grading options name (backend, model, precision, window, …)."""
    from omni_tasks.grading.asr import GraderConfigError, GraderSpec
    from omni_tasks.grading.backends import load_grader
    from omni_tasks.offline_models import OfflineModelError

    with fails_on(GraderConfigError, OfflineModelError, OSError, what="cannot load the grader"):
        return load_grader(GraderSpec.from_params(spec))
