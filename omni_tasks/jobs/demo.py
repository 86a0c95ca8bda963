"""`omni-tasks demo`: the nightly DAG, run by Airflow (`airflow dags test`), end to end on the
embedded defaults — embedded Postgres, simulator targets for `main` and `rebase`, the demo corpus
spoken by piper and graded by Whisper tiny.en, the local Slack outbox, dashboards JSON and the
HTML report.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import yaml

from omni_tasks.config import get_settings
from omni_tasks.deployment.reading import ENV
from omni_tasks.jobs.demo_history import store_history
from omni_tasks.series import Series
from omni_tasks.store import views

# The DAG files and plugins the package ships (links to the repository's dags/ and plugins/).
SHIPPED = Path(__file__).resolve().parents[1]  # the package: its dags/ and plugins/ links
BASELINE, CANDIDATE = "main", "rebase"
# A night REGRESSED but not confirmed that the same-morning re-run confirms (profiles.yaml).
PROFILES = {BASELINE: "simulator:main-demo", CANDIDATE: "simulator:rebase-demo-rerun"}
OnLine = Callable[[str], None]  # where a night's progress lines go


def airflow_env(home: Path, dsn: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(SHIPPED / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(SHIPPED / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        OMNI_DATABASE_URL=dsn,
        OMNI_HOME=str(home),
    )
    return env


def write_config(path: Path, options: Mapping[str, object]) -> Path:
    """The demo's deployment config: what a production config names, on the simulator (with
    the benchmark family's run options, by name)."""
    config = {
        "version": 1,
        "branches": [BASELINE, CANDIDATE],
        "baseline": BASELINE,
        "targets": PROFILES,
        **options,
        "dataset": "demo",
        "grader": {"backend": "faster-whisper"},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _airflow() -> list[str]:
    """Airflow's CLI in this interpreter (a wheel's venv need not hold its `airflow` script)."""
    return [sys.executable, "-m", "airflow"]


def run_nights(
    nights: int,
    last_night: dt.date,
    options: Mapping[str, object],
    history_options: Mapping[str, object],
    dsn: str,
    on_line: OnLine,
) -> list[NightRun]:
    """The demo's nights: its own config, a new seed every night (the form overrides it), then
    the week before them with `history_options` (transcript mode: seconds, not Airflow nights).
    The seeds are the demo's own (42, 43, …), not the calendar's, so `make demo` shows the same
    nights whatever day it runs."""
    home = get_settings().home
    (home / "demo").mkdir(parents=True, exist_ok=True)
    config = write_config(home / "demo" / "nightly.yaml", options)
    out = []
    for i in range(nights):
        night = last_night - dt.timedelta(days=nights - 1 - i)
        seed = 42 + i
        done = replace(run_night(config, night, {"seeds": [seed]}, dsn, on_line), seed=seed)
        out.append(done)
        if done.returncode != 0:
            break
    # The week before, stored after the DAG nights (a backfill): stored first, the baseline's
    # history would confirm the demo's 8-point step at decide, and the night would not show
    # the same-morning re-run.
    history = write_config(home / "demo" / "history.yaml", history_options)
    store_history(history, last_night - dt.timedelta(days=nights - 1), dsn, on_line)
    return out


@dataclass(frozen=True)
class FailedTask:
    """A task of the night that ended failed, with what it ran and its own log."""

    task_id: str
    label: str  # what a mapped GPU task ran (its branch and seed), else ""
    log: Path  # the task's lines of the night's log (`airflow dags test` writes no task logs)

    def __str__(self) -> str:
        return f"{self.task_id}{f' ({self.label})' if self.label else ''}"


@dataclass(frozen=True)
class NightRun:
    nightly: dt.date
    log: Path
    returncode: int
    seed: int | None = None  # the demo's seed for the night (the form's `seeds`)
    failed: tuple[FailedTask, ...] = ()  # none when Airflow itself failed (see `log`)

    def failure(self) -> str:
        """What failed, for a message's end: each failed task and its log, a line each with
        the path last (to copy), then the night's whole log (Airflow's own error, if no task
        failed)."""
        said = "".join(f"\n  {t} failed, its log: {t.log}" for t in self.failed)
        return f"{said}\n  the whole night's log: {self.log}"


def run_night(
    config: Path, night: dt.date, conf: dict[str, object], dsn: str, on_line: OnLine
) -> NightRun:
    """One night of the nightly DAG on a deployment config, run by Airflow in-process
    (`airflow dags test`); `conf` is the trigger form. Progress lines name each task (and
    mapped GPU task, by its series, branch and seed) as it starts."""
    home = get_settings().home
    env = airflow_env(home, dsn)
    (home / "demo").mkdir(parents=True, exist_ok=True)
    if not (home / "airflow" / "airflow.db").is_file():
        on_line("preparing Airflow's metadata DB (SQLite, once)")
        subprocess.run([*_airflow(), "db", "migrate"], env=env, check=True, capture_output=True)
    env[ENV] = str(config)
    log = home / "demo" / f"airflow_{night}.log"
    on_line(f"nightly {night}: airflow dags test omni_nightly (log: {log})")
    labels = _plan_labels(config, conf)
    argv = [*_airflow(), "dags", "test", "omni_nightly", night.isoformat(), "-c", json.dumps(conf)]
    with log.open("w") as fh, closing(_TaskLogs(home / "demo" / f"airflow_{night}")) as tasks:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            tasks.take(line)
            if "[DAG TEST] starting task_id=" in line:
                task, index = _task_of(line)
                label = labels.get((task, index), "")
                on_line(f"  task {task}{f' ({label})' if label else ''}")
            elif " items/s" in line and " failed, " in line:  # a task's progress line
                on_line("    " + line.rsplit(" - ", 1)[-1].strip())
        proc.wait()
    failed = tuple(
        FailedTask(task, labels.get((task, index), ""), tasks.path(task, index))
        for task, index in tasks.failed()
    )
    return NightRun(night, log, proc.returncode, failed=failed if proc.returncode else ())


def _task_of(line: str) -> tuple[str, str]:
    """The task id and map index ("" unmapped) of a `[DAG TEST] starting task_id=` line."""
    task = line.split("task_id=")[1].split()[0]
    index = line.split("map_index=")[1].split()[0] if "map_index=" in line else ""
    return task, "" if index == "-1" else index


class _TaskLogs:
    """`airflow dags test`'s output split into each task's own log (it writes no task logs),
    in `folder` (emptied first), with each task's last state as the task's lines report it
    (`new_state=failed`, `up_for_retry`, `success`)."""

    def __init__(self, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        self.folder = folder
        self.states: dict[tuple[str, str], str] = {}
        self._task: tuple[str, str] | None = None
        self._out: TextIO | None = None

    def path(self, task: str, index: str) -> Path:
        return self.folder / f"{task}{f'.{index}' if index else ''}.log"

    def take(self, line: str) -> None:
        if "[DAG TEST] starting task_id=" in line:
            self.close()  # a task that raised out of the test loop logged no end
            self._task = _task_of(line)
            self._out = self.path(*self._task).open("a")  # a retry appends
        if self._out is None or self._task is None:
            return  # the test loop's own lines are no task's
        self._out.write(line)
        if " new_state=" in line:
            self.states[self._task] = line.split(" new_state=")[1].split()[0]
        if "[DAG TEST] end task " in line:
            self.close()

    def failed(self) -> list[tuple[str, str]]:
        """The tasks that ended failed, but `watcher`, which fails because another did (named
        alone when it is all that failed)."""
        found = [task for task, state in self.states.items() if state == "failed"]
        return [task for task in found if task[0] != "watcher"] or found

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
        self._out, self._task = None, None


def _plan_labels(config: Path, conf: dict[str, object]) -> dict[tuple[str, str], str]:
    """(GPU task id, map index) → what it runs, in the order record_heads plans it."""
    from omni_tasks.deployment.night import dag_units, resolve_night
    from omni_tasks.deployment.reading import ConfigError

    try:
        night = resolve_night(conf, str(config))
    except ConfigError:
        return {}  # the DAG's first task reports it
    units = dag_units(str(config))
    out: dict[tuple[str, str], str] = {}
    index: dict[str, int] = {}
    for p in night.series:
        unit = next((u for u in units if u.key in (None, p.series.key)), units[0])
        task = unit.task_id("run_branch")
        for branch in p.branches:
            for seed in p.seeds:
                name = branch if len(p.seeds) == 1 else f"{branch} seed {seed}"
                out[(task, str(index.setdefault(task, 0)))] = name
                index[task] += 1
    return out


@dataclass(frozen=True)
class NightSummary:
    """What the demo prints of a night: each branch's figures, and the gate's decisions."""

    branches: list[views.TrendRow]
    decisions: list[views.GateRow]


def night_summary(conn: Any, series: Series, night: dt.date) -> NightSummary:
    return NightSummary(
        views.nightly_trend(conn, series, 0.5, night, night),
        views.gate_history(conn, series, night),
    )


def standing_line(conn: Any, series: Series, branch: str, nights: int = 28) -> str:
    """One line on the series' standing failures: the chronic set by mode on `branch`."""
    from omni_tasks.ledger.digest import digest, headline
    from omni_tasks.ledger.states import LedgerPolicy
    from omni_tasks.store import ledger

    try:
        found = ledger.load(conn, series, branch=branch, nights=nights)
    except LookupError:
        return f"standing failures: no graded night of {branch} yet"
    seen = max((i.nights for i in found.items), default=0)
    line = (
        f"standing failures on {branch} ({seen} night(s), {found.first_night} – "
        f"{found.last_night}): {headline(digest(found, None))}"
    )
    need = LedgerPolicy().min_nights
    if seen < need:  # a hint, not a command: the demo's Next line names the commands to run
        line += f"; an item is chronic after {need} nights (demo --nights {need})"
    return line + "; `omni-tasks items chronic --json` lists them"
