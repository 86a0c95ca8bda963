"""Progress off a terminal: a line every N items or 60 s, and one at the end, each with
done/total, failures so far, items/s and ETA — so a worker's log tells a slow server from a
hung one."""

from __future__ import annotations

import logging

import pytest

from omni_tasks.progress import ProgressLog, line, progress_bar


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_n_items_or_every_minute_and_at_the_end(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "omni_nightly")  # inside a task: its log
    clock = Clock()
    log = ProgressLog(every=100, interval_s=60.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="omni_tasks.progress"):
        task = log.add_task("synthesizing main", total=1088)
        for i in range(250):  # 250 items in 50 s, the 7th and 8th failed
            clock.now += 0.2
            log.advance(task, failed=int(i in (6, 7)))
        clock.now += 70.0  # a slow stretch: nothing done, but a minute passed
        log.advance(task, 0)
        log.finish()
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "synthesizing main: 0/1088 (0 %), started",  # its size, before the first hundred
        "synthesizing main: 100/1088 (9 %), 2 failed, 5.0 items/s, ETA 3 min 18 s",
        "synthesizing main: 200/1088 (18 %), 2 failed, 5.0 items/s, ETA 2 min 58 s",
        "synthesizing main: 250/1088 (23 %), 2 failed, 2.1 items/s, ETA 6 min 42 s",
    ]
    clock.now += 1.0
    log.advance(task, 1)
    with caplog.at_level(logging.INFO, logger="omni_tasks.progress"):
        log.finish()
    assert caplog.records[-1].getMessage().endswith("done in 2 min 1 s")


def test_an_open_ended_task_says_its_count_and_rate() -> None:
    assert line("grading k", 40, None, 0, 20.0) == "grading k: 40, 0 failed, 2.0 items/s"


def test_outside_a_task_lines_go_to_stderr_never_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's --json on stdout stays JSON, whatever logging the process has."""
    monkeypatch.delenv("AIRFLOW_CTX_DAG_ID", raising=False)
    logging.getLogger().addHandler(logging.StreamHandler())  # as a library might install
    with progress_bar(True) as bar:  # pytest's stderr is not a terminal
        task = bar.add_task("asking 3 questions", total=3)
        for _ in range(3):
            bar.advance(task, failed=1)
    said = capsys.readouterr()
    assert said.err.startswith("asking 3 questions: 0/3 (0 %), started\n")
    assert "asking 3 questions: 3/3 (100 %), 3 failed" in said.err and "done in" in said.err
    assert said.out == ""
    with progress_bar(False) as bar:  # asked to be quiet
        bar.advance(bar.add_task("x", total=1))
    assert capsys.readouterr().err == ""
