"""Every DAG tells someone when it fails: each task has an owner, a retry policy and a failure
callback (the INFRA alert of its series). Checked on every DAG file of dags/, and shown to
fail on a planted DAG that has none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"


def _bag(folder: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(folder))


def _is_watcher(task: Any) -> bool:
    """A DAG's watcher: it runs only when another task failed (whose callback has already
    raised the alert) and fails the run on purpose, so it neither retries nor alerts again."""
    return task.trigger_rule == "one_failed" and task.retries == 0


def violations(bag: Any) -> list[str]:
    """What each task of each DAG lacks: an owner of ours (not Airflow's default), retries,
    a failure callback. A watcher needs neither retries nor a callback, but every task it
    watches must have the callback."""
    from airflow.configuration import conf

    default_owner = conf.get("operators", "default_owner")
    found = [
        f"{path}: does not import: {err.splitlines()[-1]}"
        for path, err in bag.import_errors.items()
    ]
    for dag in bag.dags.values():
        for task in dag.tasks:
            where = f"{dag.dag_id}.{task.task_id}"
            if not task.owner or task.owner == default_owner:
                found.append(f"{where}: no owner")
            if _is_watcher(task):
                for upstream in task.upstream_list:
                    if not upstream.on_failure_callback:
                        found.append(f"{where}: watches {upstream.task_id}, which alerts nobody")
                continue
            if not task.retries:
                found.append(f"{where}: no retries")
            if not task.on_failure_callback:
                found.append(f"{where}: no on_failure_callback")
            if task.retries and not task.on_retry_callback:  # a dead server's first try
                found.append(f"{where}: no on_retry_callback")
    return found


@pytest.fixture(autouse=True)
def _no_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


def test_every_dag_has_an_owner_retries_and_a_failure_callback() -> None:
    bag = _bag(DAGS)
    assert len(bag.dags) == 11, sorted(bag.dags)  # 8 DAGs and 3 aliases of renamed ones
    assert violations(bag) == []


PLANTED = """
import pendulum
from airflow.sdk import dag, task


@dag(dag_id="planted", schedule=None, start_date=pendulum.datetime(2026, 11, 1, tz="UTC"))
def planted():
    @task
    def work():
        return 1

    @task(owner="omni-tasks", retries=1)
    def half_done():
        return 2

    work() >> half_done()


planted()
"""


def test_a_dag_without_owner_retries_or_callback_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "planted.py").write_text(PLANTED)
    assert violations(_bag(tmp_path)) == [
        "planted.work: no owner",
        "planted.work: no retries",
        "planted.work: no on_failure_callback",
        "planted.half_done: no on_failure_callback",
        "planted.half_done: no on_retry_callback",
    ]


def test_a_watcher_over_a_silent_task_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "watched.py").write_text(
        PLANTED.replace('"planted"', '"watched"').replace(
            "work() >> half_done()",
            """w = work()

    @task(trigger_rule="one_failed", retries=0, owner="omni-tasks")
    def watcher():
        pass

    [w, half_done()] >> watcher()""",
        )
    )
    found = violations(_bag(tmp_path))
    assert "watched.watcher: watches work, which alerts nobody" in found
    assert "watched.watcher: watches half_done, which alerts nobody" in found
    assert not [f for f in found if f.startswith("watched.watcher: no ")]
