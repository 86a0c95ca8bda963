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

import click
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
    """Parse `omni-tasks ARGS` as the CLI would, running nothing (click.UsageError if not)."""
    command: click.Command = typer.main.get_command(app)
    while isinstance(command, click.Group):
        name, args = args[0], args[1:]
        found = command.get_command(click.Context(command), name)
        assert found is not None, f"no command {name}"
        command = found
    command.make_context(command.name or "", list(args))


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
    assert [c[0] for c in from_terminal] == ["runs", "stats", "demo"], from_terminal
    runner = CliRunner()
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
