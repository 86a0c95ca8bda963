"""The DAGs: integrity (no parse-time I/O, conventions), the nightly and bisect run by
`airflow dags test` on real Postgres, and re-runs that change nothing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

from omni_tasks.synthesis.simulator import serve_in_thread
from tests.airflow_env import REPO, airflow_env, dags_test, migrate
from tests.factories import git_repo, seed_tts_corpus, simulated_night
from tests.fakes.slack_api import SlackState, slack_app
from tests.fakes.vllm_env import fake_vllm_env

TAGS = {"omni", "seed-tts", "nightly", "bisect", "regrade", "watchdog", "ab", "import", "ablate"}
TAGS |= {"deprecated"}  # the renamed DAGs' aliases, for one release


@pytest.fixture(scope="module")
def af(tmp_path_factory, results_dsn):
    root = tmp_path_factory.mktemp("airflow")
    env = airflow_env(root / "home", results_dsn, root / "omni-home")
    migrate(env)
    return env


def test_dags_parse_without_io_and_follow_conventions(monkeypatch) -> None:
    def no_io(*args, **kwargs):
        raise AssertionError("a DAG file touched the network or a database at parse time")

    monkeypatch.setattr(psycopg, "connect", no_io)
    monkeypatch.setattr("socket.socket.connect", no_io)
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
    assert bag.import_errors == {}
    from omni_tasks.evidence.links import DAG_IDS

    assert set(bag.dags) == DAG_IDS  # the plugin's links appear on exactly these
    assert set(bag.dags) == {
        "omni_nightly",
        "omni_bisect",
        "omni_regrade",
        "omni_freshness",
        "omni_ab",
        "omni_buildkite_sync",
        "omni_ablate",
        "omni_upstream_watch",
        # Aliases of the renamed DAGs, for one release: the same DAG, never scheduled.
        "seed_tts_nightly",
        "seed_tts_bisect",
        "seed_tts_regrade",
    }
    for dag in bag.dags.values():
        assert set(dag.tags) <= TAGS and "omni" in dag.tags, dag.dag_id
        for t in dag.tasks:
            assert t.owner == "omni-tasks", (dag.dag_id, t.task_id)
            assert t.retries >= 1 or t.task_id == "watcher", (dag.dag_id, t.task_id)
            # No task runs unbounded; a GPU task of a bisection may take a day, none longer.
            assert t.execution_timeout is not None, (dag.dag_id, t.task_id)
            assert t.execution_timeout <= dt.timedelta(days=1), (dag.dag_id, t.task_id)
    nightly = bag.dags["omni_nightly"]
    for name in nightly.params:  # a form in sections, in words, with no select showing `null`
        schema = nightly.params.get_param(name).schema
        assert schema.get("title") and schema.get("section"), name
        assert None not in (schema.get("enum") or []), name
    assert nightly.params.get_param("targets").schema["examples"]
    assert [t.task_id for t in nightly.topological_sort()] == [
        "record_heads",
        "run_branch",
        "summarize",
        "decide",
        "rerun",
        "deliver",
        "advise_gates",
        "plan_bisects",
        "auto_bisect",
        "dispatch_alerts",
        "refresh",
        "dispatch_late",
        "watcher",
    ]
    for dag in (nightly, bag.dags["omni_bisect"]):
        watcher = dag.get_task("watcher")
        assert watcher.trigger_rule == "one_failed"
        assert not watcher.on_failure_callback  # the failure it reports raised its own alert
    # Alerts never wait on gate advice, the report or the dashboards; what refresh raises goes
    # out after it.
    assert not {"refresh", "advise_gates"} & nightly.get_task("dispatch_alerts").upstream_task_ids
    assert nightly.get_task("dispatch_late").upstream_task_ids == {"refresh"}
    for gpu in ("run_branch", "rerun"):  # the same-morning re-run on the lane's GPUs too
        run = nightly.get_task(gpu)
        assert (run.queue, run.pool, run.pool_slots) == ("gpu", "gpu", 2), gpu
    assert nightly.get_task("dispatch_alerts").trigger_rule == "all_done"
    trigger = nightly.get_task("auto_bisect")
    assert {k: trigger.partial_kwargs[k] for k in ("skip_when_already_exists",)} == {
        "skip_when_already_exists": True
    }  # each planned trigger names its DAG
    assert nightly.catchup is False
    assert nightly.timetable.can_be_scheduled and not nightly.is_paused_upon_creation


def test_each_renamed_dag_keeps_its_old_id_as_an_unscheduled_alias() -> None:
    """For one release the old ids are the same DAGs (tasks, dependencies, form, defaults),
    never scheduled (an upgraded install's old nightly, unpaused, runs no second night), paused
    when first created, tagged and documented as deprecated in favour of the new id."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    renamed = [
        ("seed_tts_nightly", "omni_nightly"),
        ("seed_tts_bisect", "omni_bisect"),
        ("seed_tts_regrade", "omni_regrade"),
    ]
    for old, new in renamed:
        alias, dag = bag.dags[old], bag.dags[new]
        assert Path(alias.fileloc).name == f"{new}.py"  # the old files are gone
        shape = {t.task_id: t.upstream_task_ids for t in dag.tasks}
        assert {t.task_id: t.upstream_task_ids for t in alias.tasks} == shape, old
        assert alias.params.dump() == dag.params.dump(), old
        assert alias.default_args == dag.default_args, old
        assert not alias.timetable.can_be_scheduled, old
        assert alias.is_paused_upon_creation is True, old
        assert set(alias.tags) == {*dag.tags, "deprecated"}, old
        assert f"renamed `{new}`" in alias.doc_md, old


# The previous release's nightly as Airflow's metadata DB knew it: its id, its schedule, its
# first task, unpaused.
PREVIOUS_NIGHTLY = """
import pendulum
from airflow.sdk import dag, task


@dag(
    dag_id="seed_tts_nightly",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    is_paused_upon_creation=False,
)
def seed_tts_nightly():
    @task
    def record_heads():
        return []

    record_heads()


seed_tts_nightly()
"""


def test_an_upgraded_airflow_keeps_the_old_nightlys_history_and_never_schedules_it(
    tmp_path: Path, results_dsn: str
) -> None:
    """The upgrade of docs/operators/upgrade.md on a real Airflow metadata DB: the previous
    release's nightly, unpaused, with a run; then this release's DAG files in its DAG folder.
    The old id keeps its run and stays listed (not stale), now from omni_nightly.py, and the
    scheduler has no next run to create for it; omni_nightly is scheduled and waits, paused,
    for the operator."""
    import sqlite3

    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "seed_tts_nightly.py").write_text(PREVIOUS_NIGHTLY)
    env = airflow_env(tmp_path / "home", results_dsn, tmp_path / "omni-home")
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(folder)
    migrate(env)

    def airflow(*args: str) -> None:
        out = subprocess.run(
            [str(REPO / ".venv/bin/airflow"), *args],
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert out.returncode == 0, (args, out.stderr[-3000:])

    def dags() -> dict[str, tuple]:
        with sqlite3.connect(tmp_path / "home" / "airflow.db") as db:
            rows = db.execute(
                "SELECT dag_id, is_paused, is_stale, next_dagrun_create_after, relative_fileloc "
                "FROM dag"
            )
            return {r[0]: r[1:] for r in rows}

    airflow("dags", "reserialize")
    airflow("dags", "trigger", "seed_tts_nightly", "--run-id", "before-upgrade")
    paused, stale, next_run, file = dags()["seed_tts_nightly"]
    assert (paused, stale, file) == (0, 0, "seed_tts_nightly.py") and next_run is not None

    (folder / "seed_tts_nightly.py").unlink()
    for path in (REPO / "dags").glob("*.py"):
        (folder / path.name).write_text(path.read_text())
    airflow("dags", "reserialize")

    after = dags()
    assert after["seed_tts_nightly"] == (0, 0, None, "omni_nightly.py")
    paused, stale, next_run, file = after["omni_nightly"]
    assert (paused, stale, file) == (1, 0, "omni_nightly.py") and next_run is not None
    with sqlite3.connect(tmp_path / "home" / "airflow.db") as db:
        runs = db.execute("SELECT dag_id, run_id FROM dag_run").fetchall()
    assert runs == [("seed_tts_nightly", "before-upgrade")]


def _checksum(db: psycopg.Connection) -> dict[str, str]:
    """Content of every results table, audit timestamps excluded."""
    audit = {"created_at", "computed_at", "decided_at", "observed_at", "sent_at", "latency_s"}
    out = {}
    for table in (
        "run",
        "clip_audio",
        "grading",
        "clip_grade",
        "run_stats",
        "comparison",
        "gate_decision",
        "alert",
        "alert_outbox",
        "branch_head",
        "event",
    ):
        rows = db.execute(f"SELECT * FROM omni.{table}").fetchall()
        canon = sorted(
            json.dumps({k: v for k, v in r.items() if k not in audit}, default=str, sort_keys=True)
            for r in rows
        )
        out[table] = hashlib.sha256("\n".join(canon).encode()).hexdigest()
    return out


def test_nightly_runs_under_airflow_and_reruns_change_nothing(af, db, tmp_path: Path) -> None:
    conf = json.dumps(
        {
            "transcript_mode": True,
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        }
    )
    # This night's re-run would confirm a 2-point step at 100 clips less often than the
    # shipped rerun_power asks, so it would be skipped; a policy without that floor shows the
    # re-run task's runs under Airflow (test_same_morning covers the skip).
    policy = yaml.safe_load((REPO / "omni_tasks/gates/gate_policy.yaml").read_text())
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump({**policy, "rerun_power": 0.0}))
    af = {**af, "OMNI_GATE_POLICY": str(tmp_path / "policy.yaml")}
    first = dags_test(af, "omni_nightly", "2026-11-20", conf)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    runs = db.execute(
        "SELECT branch, status, n_expected FROM omni.run WHERE trigger <> 'rerun' ORDER BY branch"
    )
    assert [(r["branch"], r["status"], r["n_expected"]) for r in runs] == [
        ("main", "complete", 100),
        ("rebase", "complete", 100),
    ]
    # The night is REGRESSED but too small to confirm alone: its `rerun` task re-ran the
    # discordant items on both branches at fresh seeds, as runs of their own trigger.
    (stored,) = db.execute("SELECT result FROM omni.rerun").fetchall()
    reruns = db.execute(
        "SELECT branch, status, n_expected FROM omni.run WHERE trigger = 'rerun'"
    ).fetchall()
    seeds = len(stored["result"]["seeds"])
    assert seeds > 0 and len(reruns) == 2 * seeds
    assert {(r["branch"], r["status"], r["n_expected"]) for r in reruns} == {
        ("main", "complete", stored["result"]["items"]),
        ("rebase", "complete", stored["result"]["items"]),
    }
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 2 + 2 * seeds
    decision = db.execute("SELECT verdict, candidate_branch FROM omni.gate_decision").fetchall()
    assert len(decision) == 1 and decision[0]["candidate_branch"] == "rebase"
    assert db.execute("SELECT count(*) AS n FROM omni.comparison").fetchone()["n"] == 1
    assert db.execute("SELECT count(*) AS n FROM omni.branch_head").fetchone()["n"] == 2
    report = Path(af["OMNI_HOME"]) / "reports" / "seed_tts_en_2026-11-20.html"
    assert report.is_file()
    before = _checksum(db)
    db.commit()
    second = dags_test(af, "omni_nightly", "2026-11-20", conf)
    assert second.returncode == 0, second.stdout[-3000:]
    assert _checksum(db) == before


def test_bisect_finds_the_planted_first_bad_commit(af, db, tmp_path: Path) -> None:
    history = [f"{i:02d}" + "c" * 38 for i in range(16)]
    first_bad = history[9]
    conf = json.dumps(
        {
            "history": history,
            "target": "simulator:commit-history",
            "first_bad": first_bad,
            "transcript_mode": True,
            "dataset": str(seed_tts_corpus(tmp_path / "en")),
        }
    )
    env = {**af, "OMNI_TRUSTED_ROOTS": json.dumps([str(tmp_path)])}  # the form names a dataset
    out = dags_test(env, "omni_bisect", "2026-11-21", conf)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = db.execute("SELECT details FROM omni.event WHERE kind = 'bisect_result'").fetchone()
    assert result["details"]["first_bad"] == first_bad
    steps = db.execute("SELECT count(*) AS n FROM omni.event WHERE kind = 'bisect_step'").fetchone()
    assert steps["n"] <= math.ceil(math.log2(len(history))) + 2
    n_runs = db.execute("SELECT count(*) AS n FROM omni.run WHERE trigger = 'bisect'").fetchone()
    # Endpoints on every clip, both measured afresh on the discriminating clips, one run a step.
    assert n_runs["n"] <= math.ceil(math.log2(len(history))) + 4


def test_ablate_names_the_knob_from_the_trigger_form(af, db, tmp_path: Path) -> None:
    import datetime as dt

    dataset = seed_tts_corpus(tmp_path / "en")
    night = dt.date(2026, 11, 24)
    simulated_night(db, dataset, night, "simulator:rebase-compiled-talker")
    eager = {"stages": [{"stage_id": 1, "enforce_eager": True}]}
    conf = {
        "nightly": str(night),
        "candidate_target": "simulator:rebase-compiled-talker",
        "baseline_target": "simulator:main",
        "transcript_mode": True,
        "dataset": str(dataset),
        "ablations": [{"name": "eager-talker", "overrides": eager}],
    }
    env = {**af, "OMNI_TRUSTED_ROOTS": json.dumps([str(tmp_path)])}
    out = dags_test(env, "omni_ablate", "2026-11-25", json.dumps(conf))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    row = db.execute("SELECT details FROM omni.event WHERE kind = 'ablation_result'").fetchone()
    (verdict,) = row["details"]["ablations"]
    assert verdict["name"] == "eager-talker" and verdict["verdict"] == "regression gone"


def test_a_bad_bisect_form_fails_the_run_at_once_naming_the_field(af, tmp_path: Path) -> None:
    conf = json.dumps(
        {
            "history": ["a" * 40, "b" * 40],
            "target": "simulator:commit-history",
            "dataset": str(tmp_path / "elsewhere"),
        }
    )
    out = dags_test(af, "omni_bisect", "2026-11-22", conf)
    assert out.returncode != 0  # the watcher fails the run; dispatch_alerts alone would not
    assert (
        "dataset" in out.stdout + out.stderr
        and "not under a trusted root" in out.stdout + out.stderr
    )


def _with_config(af: dict[str, str], tmp_path: Path, config: dict, **env: str) -> dict[str, str]:
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump({"version": 1, **config}))
    return {**af, "OMNI_NIGHTLY_CONFIG": str(path), **env}


def test_a_production_shaped_config_runs_the_nightly(af, db, tmp_path: Path) -> None:
    """Both branches served by `vllm serve` from an environment (the fake one: its `vllm`
    serves the simulator), 2 GPUs per server, read from the deployment config alone."""
    fake = fake_vllm_env(tmp_path)
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
        "environment": {"strategy": "existing", "python": sys.executable},
        "server": {
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "gpus": 2,
            "startup_timeout_s": 120,
            "env": {"PYTHONPATH": fake["PYTHONPATH"]},
        },
        "transcript_mode": True,
        "limit": 10,
        "gpu_task_timeout_s": 600,
        "grader": {"backend": "transformers", "harness_version": "0.30.0"},
    }
    env = _with_config(
        af,
        tmp_path,
        config,
        PATH=fake["PATH"],
        OMNI_GPUS="0,1",
        OMNI_TRUSTED_ROOTS=json.dumps([sys.prefix]),
    )
    out = dags_test(env, "omni_nightly", "2026-11-23", "{}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = db.execute(
        "SELECT branch, status, n_expected, stack, config FROM omni.run ORDER BY branch"
    ).fetchall()
    assert [(r["branch"], r["status"], r["n_expected"]) for r in runs] == [
        ("main", "complete", 10),
        ("rebase", "complete", 10),
    ]
    assert {r["stack"]["vllm"] for r in runs} == {"0.11.0"}
    assert {r["config"]["harness_version"] for r in runs} == {"0.30.0"}
    assert db.execute("SELECT count(*) AS n FROM omni.gate_decision").fetchone()["n"] == 1


def test_a_multiple_choice_nightly_runs_under_airflow(af, db, tmp_path: Path) -> None:
    """The same DAG runs Daily-Omni: each branch's simulator answers the demo questions, the
    gate pairs them by question and finds the rebase's extra wrong answers."""
    config = {
        "benchmark": "daily_omni",
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        "transcript_mode": True,
    }
    out = dags_test(_with_config(af, tmp_path, config), "omni_nightly", "2026-11-24", "{}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = db.execute(
        "SELECT benchmark, branch, status, n_expected FROM omni.run ORDER BY branch"
    ).fetchall()
    assert [tuple(r.values()) for r in runs] == [
        ("daily_omni", "main", "complete", 48),
        ("daily_omni", "rebase", "complete", 48),
    ]
    (d,) = db.execute("SELECT benchmark, verdict, comparison_id FROM omni.gate_decision")
    assert (d["benchmark"], d["verdict"]) == ("daily_omni", "REGRESSED")


def test_a_config_typo_fails_at_once_naming_the_field(af, db, tmp_path: Path) -> None:
    """No retries with backoff: the first task fails for good, the log says what to fix."""
    config = {
        "branches": ["main", "rebse"],
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
    }
    out = dags_test(_with_config(af, tmp_path, config), "omni_nightly", "2026-11-24", "{}")
    log = out.stdout + out.stderr
    assert out.returncode != 0
    assert "targets: branch 'rebse' has no target (targets: main, rebase)" in log
    assert "AirflowFailException" in log and "up_for_retry" not in log.lower()
    assert "DagRun Finished" in log and "state=failed" in log
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0


def _uri(dsn: str) -> str:
    """An Airflow connection URI for a libpq DSN."""
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(dsn)
    host = quote(str(p["host"]), safe="")  # the embedded server's socket directory, too
    return f"postgresql://{p.get('user', 'postgres')}@{host}:{p.get('port', 5432)}/{p['dbname']}"


def test_connections_go_through_provider_hooks_and_a_refused_token_keeps_the_outbox(
    af, db, tmp_path: Path
) -> None:
    """The results DB through PostgresHook (`omni_results`; OMNI_DATABASE_URL points nowhere),
    Slack through SlackHook (`slack_api_default`). A token without chat:write fails the
    dispatch task naming what to fix, and every message stays queued; fixed, the next run
    delivers them."""
    slack = SlackState(refuse_with="missing_scope")
    conf = json.dumps(
        {
            "transcript_mode": True,
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase-demo"},
        }
    )
    with serve_in_thread(slack_app(slack)) as slack_url:
        env = {
            **af,
            "OMNI_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/nowhere",
            "AIRFLOW_CONN_OMNI_RESULTS": _uri(af["OMNI_DATABASE_URL"]),
            "AIRFLOW_CONN_SLACK_API_DEFAULT": json.dumps(
                {
                    "conn_type": "slack",
                    "password": "xoxb-test",
                    "extra": {"channel": "C0ALERTS", "base_url": f"{slack_url}/api/"},
                }
            ),
        }
        refused = dags_test(env, "omni_nightly", "2026-11-25", conf)
        log = refused.stdout + refused.stderr
        assert refused.returncode != 0
        assert "missing_scope: the token lacks a scope it needs (needed: chat:write)" in log
        assert "message(s) stay in the outbox" in log
        queued = db.execute("SELECT state, attempts FROM omni.alert_outbox").fetchall()
        assert queued and {(q["state"], q["attempts"]) for q in queued} == {("pending", 0)}
        assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 2
        db.commit()
        slack.refuse_with = None
        fixed = dags_test(env, "omni_nightly", "2026-11-25", conf)
    assert fixed.returncode == 0, fixed.stdout[-3000:]
    assert "delivered to slack" in fixed.stdout + fixed.stderr
    states = db.execute("SELECT DISTINCT state FROM omni.alert_outbox").fetchall()
    assert [s["state"] for s in states] == ["sent"]
    assert slack.messages and {m["channel"] for m in slack.messages} == {"C0ALERTS"}


def test_the_docs_take_a_newcomer_to_dags_list(tmp_path: Path) -> None:
    """The configure page's commands, run as written in a fresh directory: the four DAGs and
    the pool."""
    import re
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "docs" / "operators" / "configure.md").read_text()
    section = readme.split("**From nothing to `airflow dags list`**", 1)[1]
    script = re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    for name in (".venv", "dags", "plugins"):
        (tmp_path / name).symlink_to(repo / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for dag_id in ("omni_nightly", "omni_bisect", "omni_regrade", "omni_freshness"):
        assert re.search(rf"^{dag_id}\s*\|", out.stdout, re.M), out.stdout[-2000:]
    assert re.search(r"^gpu\s*\|\s*4\s*\|", out.stdout, re.M)


def test_auto_bisect_triggers_the_bisect_dag_once(af, db, tmp_path: Path) -> None:
    """A SAME night on a good commit, then a confirmed REGRESSED night four commits later: the
    nightly's auto_bisect task triggers omni_bisect over that range, and a re-run of the
    night triggers nothing new (the run id is fixed per alert)."""
    repo = tmp_path / "repo"
    commits = git_repo(repo, 5, "main")
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "repo": str(repo),
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        "transcript_mode": True,
        "auto_bisect": {"enabled": True, "budget": 8.0},
        "dataset": str(
            seed_tts_corpus(tmp_path / "en")
        ),  # enough clips to call the good night SAME
    }
    env = _with_config(af, tmp_path, config, OMNI_TRUSTED_ROOTS=json.dumps([str(tmp_path)]))
    good = {
        "commits": {"main": commits[0], "rebase": commits[0]},
        "targets": {"main": "simulator:main", "rebase": "simulator:main"},
    }
    bad = {"commits": {"main": commits[0], "rebase": commits[4]}}
    for night, conf in (("2026-11-27", good), ("2026-11-28", bad), ("2026-11-28", bad)):
        out = dags_test(env, "omni_nightly", night, json.dumps(conf), every_dag=True)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        db.commit()
    verdicts = [
        r["verdict"] for r in db.execute("SELECT verdict FROM omni.gate_decision ORDER BY nightly")
    ]
    assert verdicts == ["SAME", "REGRESSED"]
    listed = subprocess.run(
        [
            str(Path(sys.executable).with_name("airflow")),
            "dags",
            "list-runs",
            "omni_bisect",
            "-o",
            "json",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    listed_runs = json.loads(listed.stdout.strip().splitlines()[-1])  # after Airflow's log lines
    runs = [r for r in listed_runs if r["run_id"].startswith("auto_bisect__")]  # not manual ones
    assert [r["run_id"] for r in runs] == ["auto_bisect__alert1"]
    assert runs[0]["state"] == "queued"  # the scheduler (not `dags test`) starts it
    details = db.execute("SELECT details FROM omni.alert").fetchone()["details"]
    assert details["bisect"]["conf"]["history"] == commits


def test_a_dead_target_costs_its_branch_not_the_night(af, db, tmp_path: Path) -> None:
    """rebase's server is down: main is benchmarked and graded, the report is written, and the
    night's one INFRA message (delivered in the same DAG run) names the dead target and why."""
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "simulator:main", "rebase": "http://127.0.0.1:1"},
        "limit": 5,
    }
    out = dags_test(_with_config(af, tmp_path, config), "omni_nightly", "2026-11-26", "{}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = db.execute("SELECT branch, status FROM omni.run ORDER BY branch").fetchall()
    assert [tuple(r.values()) for r in runs] == [("main", "complete"), ("rebase", "failed")]
    assert (Path(af["OMNI_HOME"]) / "reports" / "seed_tts_en_2026-11-26.html").is_file()
    messages = db.execute("SELECT state, payload::text AS p FROM omni.alert_outbox").fetchall()
    infra = [m for m in messages if "INFRA" in m["p"]]
    assert len(infra) == 1 and infra[0]["state"] == "sent"
    from omni_tasks.trust.redact import escape  # data in mrkdwn: a URL cannot become a link

    text = json.loads(infra[0]["p"])["blocks"][1]["text"]["text"]
    assert escape("(target http://127.0.0.1:1)") in text and "connection failed" in text


def _night_in_background(env: dict[str, str], night: str, log: Path) -> subprocess.Popen[bytes]:
    """`airflow dags test omni_nightly NIGHT` left running, its output in `log`: for a test that
    looks at the night while it runs and stops it."""
    with log.open("w") as out:
        return subprocess.Popen(
            [str(REPO / ".venv/bin/airflow"), "dags", "test", "omni_nightly", night],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_a_dead_server_is_reported_on_its_first_failed_try(af, db, tmp_path: Path) -> None:
    """rebase's launched server crashes at start: while its task waits out its retry delay
    (5 minutes: the night is stopped then), the first failed try's INFRA alert is already in
    the outbox, with its id, what to run next and the server's log as a path that exists."""
    import re
    import sqlite3
    import time

    fake = fake_vllm_env(tmp_path, mode="crash")
    config = {
        "branches": ["main", "rebase"],
        "baseline": "main",
        "targets": {"main": "simulator:main", "rebase": "vllm-serve"},
        "environment": {"strategy": "existing", "python": sys.executable},
        "server": {"startup_timeout_s": 10, "env": {"PYTHONPATH": fake["PYTHONPATH"]}},
        "transcript_mode": True,
        "limit": 3,
    }
    env = _with_config(
        af,
        tmp_path,
        config,
        PATH=fake["PATH"],
        OMNI_GPUS="0,1",
        OMNI_TRUSTED_ROOTS=json.dumps([sys.prefix, str(tmp_path)]),
    )
    metadata_db = Path(af["AIRFLOW_HOME"]) / "airflow.db"  # shared by this worker's tests

    def run_branch_tries() -> set[tuple[str, str, int]]:
        metadata = sqlite3.connect(metadata_db)
        try:
            return set(
                metadata.execute(
                    "SELECT run_id, state, try_number FROM task_instance "
                    "WHERE task_id = 'run_branch' AND map_index = 1"
                ).fetchall()
            )
        finally:
            metadata.close()

    earlier = {run_id for run_id, _, _ in run_branch_tries()}  # other tests' nights
    log = tmp_path / "dags-test.log"
    proc = _night_in_background(env, "2026-11-28", log)
    deadline, rows = time.monotonic() + 240, []
    try:
        while not rows:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
            rows = db.execute(
                "SELECT o.kind, o.payload, a.alert_id FROM omni.alert_outbox o "
                "JOIN omni.alert a USING (alert_id) WHERE a.kind = 'infra' "
                "AND a.alert_key LIKE %s ORDER BY o.message_id",
                ("%|task|omni_nightly|%",),
            ).fetchall()
            db.commit()
        states = [(st, n) for run_id, st, n in run_branch_tries() if run_id not in earlier]
    finally:  # nothing runs while a retry waits (dags test would wait it out on SIGTERM)
        proc.kill()
        proc.wait(timeout=30)
    assert states == [("up_for_retry", 1)]  # reported on its first try, before its retry
    assert [r["kind"] for r in rows] == ["post"]
    alert_id, payload = rows[0]["alert_id"], rows[0]["payload"]
    assert "run_branch try 1 failed" in payload["text"]
    post = json.dumps(payload)
    assert f"*Alert {alert_id}*" in post and f"`omni-tasks alerts ack {alert_id} " in post
    assert "`omni-tasks runs list --benchmark seed_tts_en " in post
    reason = payload["blocks"][1]["text"]["text"]
    logs = [p for p in re.findall(r"`([^`]*)`", reason) if p.endswith(".log")]
    assert logs and Path(logs[0]).is_file(), reason  # pasted, the server's log opens


def test_sigterm_stops_a_running_night_and_its_alert_still_goes_out(af, db, tmp_path: Path) -> None:
    """`airflow dags test` (and a worker shutting down) send SIGTERM: the running task ends as
    terminated, later tasks do not start, and the INFRA message about it is delivered."""
    import signal
    import time

    config = {
        "branches": ["main", "rebase"],
        "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
    }  # real audio and ASR on 100 clips a branch: a night long enough to interrupt
    env = _with_config(af, tmp_path, config)
    log = tmp_path / "dags-test.log"
    proc = _night_in_background(env, "2026-11-27", log)
    deadline = time.monotonic() + 120
    while "synthesizing" not in log.read_text() and "run_branch" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    time.sleep(3)  # inside the GPU task
    proc.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    proc.wait(timeout=90)
    took = time.monotonic() - stopped
    text = log.read_text()
    assert proc.returncode != 0 and took < 45, (took, text[-3000:])
    assert "stopped by SIGTERM" in text and "state=failed" in text
    runs = db.execute("SELECT count(*) AS n FROM omni.run WHERE status = 'complete'").fetchone()
    assert runs["n"] == 0  # the night did not run on to its end
    sent = db.execute(
        "SELECT payload::text AS p FROM omni.alert_outbox WHERE state = 'sent'"
    ).fetchall()
    assert any("stopped by SIGTERM" in m["p"] for m in sent)


def test_each_series_chain_waits_on_its_own_gpu_tasks_only(monkeypatch, tmp_path: Path) -> None:
    """Per-series isolation, read from the DAG's shape: a series' decision and delivery are
    downstream of its own GPU task (and its retries) and of no other series' task."""
    import yaml

    from tests.integration.test_fleet import FLEET

    config = tmp_path / "fleet.yaml"
    config.write_text(yaml.safe_dump(FLEET, sort_keys=False))
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", str(config))
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    from airflow.dag_processing.dagbag import DagBag

    dags = Path(__file__).resolve().parents[2] / "dags"
    bag = DagBag(dag_folder=str(dags / "omni_nightly.py"))
    assert bag.import_errors == {}
    nightly = bag.dags["omni_nightly"]
    suffixes = {
        "seed_tts_en.Qwen3-Omni-30B-A3B-Instruct.cuda-h100x2": "gpu",
        "daily_omni.MiniCPM-o-4_5.rocm-mi300": "gpu-rocm",
        "librispeech.MiniCPM-o-4_5.npu-a3": "npu",
    }
    for suffix, queue in suffixes.items():
        run = nightly.get_task(f"run_branch__{suffix}")
        assert (run.queue, run.pool) == (queue, queue)
        rerun = nightly.get_task(f"rerun__{suffix}")
        assert (rerun.queue, rerun.pool) == (queue, queue)
        for task in ("summarize", "decide", "rerun", "deliver"):
            upstream = nightly.get_task(f"{task}__{suffix}").get_flat_relative_ids(upstream=True)
            gpu = {t for t in upstream if t.startswith(("run_branch", "rerun"))}
            own = {f"run_branch__{suffix}"} | ({f"rerun__{suffix}"} if task == "deliver" else set())
            assert gpu == own, (task, suffix, gpu)
    # Only the night's after-work (bisects, advice, reports) waits for every series (its
    # re-runs too: a night the re-run confirms is bisected).
    assert {f"rerun__{s}" for s in suffixes} <= nightly.get_task("plan_bisects").upstream_task_ids
