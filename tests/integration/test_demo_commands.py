"""Every `omni-tasks …` command the demo prints works: those in its outbox messages (the alert's
Next line, the reproduce line) and its terminal output run against the demo's home and exit 0;
an A/B's message offers the `ab` that runs it again, and that command runs too. A command that
starts another Airflow night (`demo`) is parsed by the real CLI instead of run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from omni_tasks.cli import app
from tests.airflow_env import REPO

SPAN = re.compile(r"`(omni-tasks [^`]+)`")
PARSED_ONLY = {"demo"}  # another whole Airflow night per call: minutes


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def _commands(text: str) -> list[list[str]]:
    return [shlex.split(c)[1:] for c in SPAN.findall(text)]


def _parses(args: list[str]) -> None:
    """Parse `omni-tasks ARGS` as the CLI would, running nothing (a usage error if not)."""
    command: Any = typer.main.get_command(app)  # typer's own click: its group types
    while hasattr(command, "list_commands"):  # a group: descend to its subcommand
        name, args = args[0], args[1:]
        found = command.get_command(command.context_class(command), name)
        assert found is not None, f"no command {name}"
        command = found
    command.make_context(command.name or "", list(args))


def _lists_the_planted_standing_failures(runner: CliRunner, stdout: str) -> None:
    """The demo stores a week of history before its night, so `items chronic --json` on its
    home lists chronic items on main, each with a mode and a rate: exactly the standing failures
    the demo's main profile plants (its `chronic_event` on the item's text)."""
    from omni_tasks.dataset import DEMO_META
    from omni_tasks.synthesis.profiles import load_profile

    planted = load_profile("main-demo")

    assert "history " in stdout and "(seed 1000, transcript)" in stdout, stdout[:3000]
    out = runner.invoke(app, ["items", "chronic", "--json"])
    assert out.exit_code == 0, out.output[-2000:]
    [main] = [s for s in json.loads(out.stdout)["series"] if s["branch"] == "main"]
    chronic = [i for i in main["items"] if i["state"] == "chronic"]
    assert chronic, main["headline"]
    standing = next(line for line in stdout.splitlines() if "standing failures on main" in line)
    assert f"{len(chronic)} chronic" in standing, standing
    texts = {
        row[0]: row[3]
        for row in (line.split("|") for line in DEMO_META.read_text().splitlines())
        if len(row) == 4
    }
    assert {i["utt_id"] for i in chronic} == {
        utt for utt, text in texts.items() if planted.chronic_event(text)
    }, chronic
    for item in chronic:
        assert item["mode"] and item["nights"] >= 7, item  # the history's 6 + the DAG's night
        assert item["rate"] == item["broken"] / item["nights"] > 0.5, item


def test_every_command_the_demo_prints_exits_0(db, tmp_path: Path) -> None:
    home = Path(os.environ["OMNI_HOME"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "1000"}  # no wrapped command
    demo = subprocess.run(
        [str(REPO / ".venv/bin/omni-tasks"), "demo", "--transcript-mode"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    posted = [json.loads(p.read_text()) for p in sorted((home / "outbox").glob("*.json"))]
    from_outbox = [c for m in posted for t in _texts(m) for c in _commands(t)]
    # The terminal shows the messages too, then what to run after the demo.
    from_terminal = [c for c in _commands(demo.stdout) if c not in from_outbox]
    verbs = [c[:2] if c[0] in ("alerts", "runs") else c[:1] for c in from_outbox]
    # The confirmed regression's Next line and its reproduce line.
    assert verbs == [["alerts", "ack"], ["alerts", "invalid"], ["report"], ["bench"]], verbs
    # The standing-failures line, then the Next line.
    assert [c[0] for c in from_terminal] == ["items", "runs", "stats", "demo"], from_terminal
    # Its night is REGRESSED, not confirmed by the pooled rule, and the re-run task confirms it.
    assert "*confirmed the same morning: " in demo.stdout, demo.stdout[-3000:]
    runner = CliRunner()
    _lists_the_planted_standing_failures(runner, demo.stdout)
    for args in from_outbox + from_terminal:
        if args[0] in PARSED_ONLY:
            _parses(args)
            continue
        out = runner.invoke(app, args)
        assert out.exit_code == 0, (args, out.output[-2000:])
        if args[:2] == ["alerts", "ack"]:  # its update offers what still applies
            update = db.execute(
                "SELECT payload::text AS p FROM omni.alert_outbox WHERE kind = 'update' "
                "ORDER BY message_id DESC LIMIT 1"
            ).fetchone()
            assert "omni-tasks alerts ack" not in update["p"]
            assert f"omni-tasks alerts invalid {args[2]}" in update["p"]
    # An A/B's message: its `ab` command runs the same A/B again.
    sides = ["--base-target", "simulator:main", "--head-target", "simulator:rebase-demo"]
    shas = ["--base-sha", "a" * 40, "--head-sha", "b" * 40, "--limit", "20"]
    first = runner.invoke(app, ["ab", *sides, *shas, "--transcript-mode"])
    assert first.exit_code == 0, first.output[-2000:]
    ab_post = db.execute(
        "SELECT payload FROM omni.alert_outbox WHERE idempotency_key LIKE 'ab|%'"
    ).fetchone()
    again = [c for t in _texts(ab_post["payload"]) for c in _commands(t)]
    assert [c[0] for c in again] == ["ab"] and "--transcript-mode" in again[0], again
    rerun = runner.invoke(app, again[0])
    assert rerun.exit_code == 0, rerun.output[-2000:]


def test_a_members_bisect_and_a_failed_tasks_next_commands_parse() -> None:
    """What the demo cannot print (its first night has no last good commit; its servers never
    fail): a member's bisect over its range, and a failed task's INFRA next steps, parse as
    the real CLI reads them (a bisect needs each commit's server, so it is not run here)."""
    import datetime as dt

    from omni_tasks.alerts import infra, messages
    from omni_tasks.alerts.blocks import CommitRange
    from omni_tasks.series import Series
    from tests.factories import stored_decision

    d = stored_decision(benchmark="daily_omni", model="openbmb/MiniCPM-o-4_5", lane="rocm-mi300")
    good, bad = "1" * 40, "2" * 40
    steps = messages.next_steps(d, 7, CommitRange(bad, "2026-11-02", good, "2026-11-01"))
    bisect = [shlex.split(s)[1:] for s in steps if s.startswith("omni-tasks bisect")]
    assert len(bisect) == 1 and bisect[0][1:3] == [good, bad], steps
    assert bisect[0][bisect[0].index("--lane") :][:2] == ["--lane", "rocm-mi300"]
    failed = infra.FailedTry(
        Series("daily_omni", "openbmb/MiniCPM-o-4_5", "rocm-mi300"),
        "omni_nightly",
        "run_branch",
        "scheduled__2026-11-30T02:00:00+00:00",
        dt.date(2026, 11, 30),
        1,
        "boom",
    )
    for step in [*steps, *infra.next_steps(failed, 7)]:
        _parses(shlex.split(step)[1:])
