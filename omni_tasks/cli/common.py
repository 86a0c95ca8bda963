"""What every command group shares: the Typer apps, errors and output (options and the
preamble commands share are in `options`)."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Annotated, Any, Final, NoReturn, TypeVar

import typer
from rich.console import Console

from omni_tasks.contracts import Contract

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

console = Console()
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


def json_out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def say(line: str) -> None:
    """A line of progress or status on stderr (stdout keeps the command's output)."""
    err.print(line, highlight=False)


def parse_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"not a date (YYYY-MM-DD): {value!r}")
