"""The embedded default: no OMNI_DATABASE_URL, a pgserver under OMNI_HOME reused across
separate CLI processes, and a DSN that works after the command returns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.factories import small_artifact, write_json


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OMNI_DATABASE_URL"}
    env["OMNI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "omni_tasks", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    cli(home, "db", "stop")


def test_embedded_server_is_reused_across_commands(home: Path, tmp_path: Path) -> None:
    url = cli(home, "db", "url", "--show-password")
    assert url.returncode == 0, url.stderr
    dsn = url.stdout.strip()
    assert "\n" not in dsn and str(home) in dsn
    imported = cli(
        home,
        "import",
        "vllm-omni",
        str(write_json(tmp_path / "a.json", small_artifact(3))),
        "--branch",
        "main",
    )
    assert imported.returncode == 0, imported.stderr
    # The server outlived both commands: connect with the printed DSN from this process.
    with psycopg.connect(dsn) as conn:
        n = conn.execute("SELECT count(*) FROM omni.clip_audio").fetchone()
    assert n == (3,)
    listed = cli(home, "runs", "list", "--json")
    assert imported.stdout.strip() in listed.stdout
    assert cli(home, "db", "stop").stdout.strip() == "embedded Postgres stopped"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=3)
