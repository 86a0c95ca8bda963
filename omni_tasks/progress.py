"""Progress of long work (synthesis, questions, grading), on a terminal and off it.

On a terminal it is one rich progress bar per task. Off a terminal (an Airflow worker, a piped
command, CI) a bar is invisible, and hours of silence cannot tell a slow server from a hung
one: each task writes a line every `every` items or `interval_s` seconds, whichever comes
first, and one when it ends — done/total, failures so far, items/s and ETA — to the task log
(the `omni_tasks.progress` logger, inside an Airflow task) or else to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

log = logging.getLogger("omni_tasks.progress")


@dataclass
class _Task:
    description: str
    total: int | None
    started: float
    done: int = 0
    failed: int = 0
    said_at: float = 0.0
    said_done: int = 0


@dataclass
class ProgressLog:
    """The off-terminal reporter: a line per `every` items or `interval_s` seconds."""

    every: int = 100
    interval_s: float = 60.0
    clock: Any = time.monotonic
    tasks: list[_Task] = field(default_factory=list)

    def add_task(self, description: str, total: int | None = None) -> int:
        """A line as the work starts, with its size: a log that says what it is doing before
        the first hundred items (a task with no line yet reads as hung)."""
        now = self.clock()
        self.tasks.append(_Task(description, total, now, said_at=now))
        emit(f"{description}: 0/{total} (0 %), started" if total else f"{description}: started")
        return len(self.tasks) - 1

    def advance(self, task: int, advance: int = 1, failed: int = 0) -> None:
        t = self.tasks[task]
        t.done += advance
        t.failed += failed
        now = self.clock()
        if t.done - t.said_done >= self.every or now - t.said_at >= self.interval_s:
            self._say(t, now)

    def finish(self) -> None:
        for t in self.tasks:
            if t.done != t.said_done or t.done == 0:
                self._say(t, self.clock(), final=True)

    def _say(self, t: _Task, now: float, final: bool = False) -> None:
        t.said_at, t.said_done = now, t.done
        emit(line(t.description, t.done, t.total, t.failed, now - t.started, final))


def line(
    description: str,
    done: int,
    total: int | None,
    failed: int,
    elapsed_s: float,
    final: bool = False,
) -> str:
    """`synthesizing main: 120/1088 (11 %), 3 failed, 4.2 items/s, ETA 3 min 50 s`."""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    of = f"{done}/{total} ({100 * done / total:.0f} %)" if total else f"{done}"
    parts = [f"{description}: {of}", f"{failed} failed", f"{rate:.1f} items/s"]
    if final:
        parts.append(f"done in {_duration(elapsed_s)}")
    elif total and rate > 0:
        parts.append(f"ETA {_duration((total - done) / rate)}")
    return ", ".join(parts)


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def emit(text: str) -> None:
    """To the task log inside an Airflow task (its runner exports AIRFLOW_CTX_DAG_ID), else to
    stderr: a command's stdout (its --json) never carries progress, whatever logging a library
    installed in the process."""
    if os.environ.get("AIRFLOW_CTX_DAG_ID"):
        log.info(text)
    else:
        print(text, file=sys.stderr, flush=True)


class _Bar:
    """A rich bar that also counts failures (shown in its description)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.names: dict[int, str] = {}
        self.failed: dict[int, int] = {}

    def add_task(self, description: str, total: int | None = None) -> int:
        task = int(self.progress.add_task(description, total=total))
        self.names[task], self.failed[task] = description, 0
        return task

    def advance(self, task: int, advance: int = 1, failed: int = 0) -> None:
        if failed:
            self.failed[task] += failed
            shown = f"{self.names[task]} ({self.failed[task]} failed)"
            self.progress.update(task, description=shown)  # type: ignore[arg-type]
        self.progress.advance(task, advance)  # type: ignore[arg-type]


class progress_bar:
    """A bar on a terminal, a progress log off it; nothing when `show` is False."""

    def __init__(self, show: bool = True) -> None:
        console = Console(stderr=True)
        self.terminal = show and console.is_terminal
        self.quiet = not show
        self.rich = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not self.terminal,
            transient=False,
        )
        self.log = ProgressLog()

    def __enter__(self) -> _Bar | ProgressLog | _Quiet:
        if self.terminal:
            self.rich.__enter__()
            return _Bar(self.rich)
        return _Quiet() if self.quiet else self.log

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.terminal:
            self.rich.__exit__(kind, exc, tb)
        elif not self.quiet:
            self.log.finish()


class _Quiet:
    def add_task(self, description: str, total: int | None = None) -> int:
        return 0

    def advance(self, task: int, advance: int = 1, failed: int = 0) -> None:
        pass
