"""`omni-tasks demo`: the nightly DAG, run by Airflow (`airflow dags test`), end to end on the
embedded defaults — embedded Postgres, simulator targets for `main` and `rebase`, the demo corpus
spoken by piper and graded by Whisper tiny.en, the local Slack outbox, dashboards JSON and the
HTML report.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from omni_tasks.config import get_settings
from omni_tasks.deployment.reading import ENV
from omni_tasks.series import Series
from omni_tasks.store import views

# The DAG files and plugins the package ships (links to the repository's dags/ and plugins/).
SHIPPED = Path(__file__).resolve().parents[1]  # the package: its dags/ and plugins/ links
BASELINE, CANDIDATE = "main", "rebase"
PROFILES = {BASELINE: "simulator:main", CANDIDATE: "simulator:rebase-demo"}
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
    nights: int, last_night: dt.date, options: Mapping[str, object], dsn: str, on_line: OnLine
) -> list[NightRun]:
    """The demo's nights: its own config, a new seed every night (the form overrides it). The
    seeds are the demo's own (42, 43, …), not the calendar's, so `make demo` shows the same
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
    return out


@dataclass(frozen=True)
class NightRun:
    nightly: dt.date
    log: Path
    returncode: int
    seed: int | None = None  # the demo's seed for the night (the form's `seeds`)


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
    with log.open("w") as fh:
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
            if "[DAG TEST] starting task_id=" in line:
                task = line.split("task_id=")[1].split()[0]
                index = line.split("map_index=")[1].split()[0] if "map_index=" in line else ""
                label = labels.get((task, index), "")
                on_line(f"  task {task}{f' ({label})' if label else ''}")
            elif " items/s" in line and " failed, " in line:  # a task's progress line
                on_line("    " + line.rsplit(" - ", 1)[-1].strip())
        proc.wait()
    return NightRun(night, log, proc.returncode)


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
