"""`omni-tasks`: every step of the platform from the command line (the DAGs call the same
functions). One module per command group; importing them registers their commands, in the
order `--help` lists them (the order of the work: import, synthesize, grade, decide, show)."""

# ruff: noqa: F401, I001
from omni_tasks.cli import db, audio, benchmarks, imports, runs
from omni_tasks.cli import synthesis, grading, statistics, gates, ab, bisect, ablate, concurrency
from omni_tasks.cli import outputs, items
from omni_tasks.cli import alerts, demo, doctor
from omni_tasks.cli.common import app

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover - console entry
    app()
