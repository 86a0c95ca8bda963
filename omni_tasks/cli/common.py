"""What every command group shares: the Typer apps, errors and output (options and the
preamble commands share are in `options`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, Final, NoReturn, TypeVar, get_args

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup, TyperOption

from omni_tasks.contracts import Contract

# Help is Markdown: a docstring's paragraphs are rewrapped to the terminal (Rich mode keeps a
# docstring's line breaks after its first paragraph, so sentences break mid-line at 80 columns).
HELP_MARKUP: Final = "markdown"

# What an option takes, by its type, where it names no metavar of its own (`--nightly DATE`).
METAVARS: Final[dict[object, str]] = {int: "N", float: "NUMBER", str: "TEXT", dt.datetime: "DATE"}


def _show_values(params: list[Any]) -> list[Any]:
    """`params` with each option's metavar set: none for a flag, else its own or its type's.

    Typer 0.29's help prints a type after every option, flags included (`--json <bool>`,
    `--help <bool>`); an option's metavar replaces it."""
    for option in params:
        if not isinstance(option, TyperOption) or option.metavar is not None:
            continue
        described = option.type_descriptor
        if option.is_flag or option.count:
            option.metavar = ""
        elif described.is_path:
            option.metavar = described.path_type.upper()
        else:
            kind = get_args(described.annotation)[0] if described.is_list else described.annotation
            option.metavar = METAVARS.get(kind, (option.name or "value").upper())
    return params


class _Command(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _show_values(super().get_params(ctx))


class _Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _show_values(super().get_params(ctx))


class _App(typer.Typer):
    """A Typer app whose groups and commands show what each option takes (`_show_values`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=_Group, rich_markup_mode=HELP_MARKUP, **kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        return super().command(name, cls=_Command, **kwargs)


app = _App(
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


def group(name: str, help: str) -> typer.Typer:
    """The command group `omni-tasks NAME` (its help is Markdown; given nothing, it shows it)."""
    commands = _App(help=help, no_args_is_help=True)
    app.add_typer(commands, name=name)
    return commands


simulator_app = group("simulator", "The local vLLM-Omni stand-in (piper voice, planted failures).")
dashboards_app = group("dashboards", "Grafana dashboards as code.")
alerts_app = group("alerts", "Slack alerts: the outbox and its delivery.")
db_app = group("db", "The results database (embedded Postgres unless OMNI_DATABASE_URL).")
import_app = group("import", "Import results produced elsewhere.")
runs_app = group("runs", "Inspect stored runs.")
audio_app = group("audio", "Stored clip audio: retention.")
benchmarks_app = group("benchmarks", "The benchmarks omni-tasks tracks.")
items_app = group("items", "Standing failures: the items broken night after night (the ledger).")
doctor_app = group("doctor", "Check this host's setup.")

Result = TypeVar("Result", bound=Contract)
TREND_ROWS = 14  # nights `trend` lists (all of them with --json)

# Neither console highlights (colours numbers, quotes, paths): keys, dates and figures print as
# they are, styled only where a command says so in markup.
console = Console(highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code)


def json_out(value: Any) -> None:
    """`value` as JSON on stdout: a dataclass as its fields, what else JSON lacks as its str."""
    sys.stdout.write(json.dumps(value, indent=2, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    is_record = dataclasses.is_dataclass(value) and not isinstance(value, type)
    return dataclasses.asdict(value) if is_record else str(value)


def say(line: str) -> None:
    """A line of progress or status on stderr (stdout keeps the command's output)."""
    err.print(line)


def parse_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"not a date (YYYY-MM-DD): {value!r}")
