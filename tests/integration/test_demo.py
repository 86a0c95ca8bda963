"""`omni-tasks demo` as a new user runs it (transcript mode keeps it fast here; `make demo`
runs the same DAG with audio): Airflow runs the nightly, it ends in a confirmed REGRESSED and
one Slack message in the local outbox, and says what was simulated and where things are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_demo_ends_confirmed_regressed_with_one_slack_message(db, results_dsn, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMNI_", "AIRFLOW"))}
    env.update(OMNI_DATABASE_URL=results_dsn, OMNI_HOME=str(tmp_path / "home"), COLUMNS="120")
    exe = Path(sys.executable).with_name("omni-tasks")
    out = subprocess.run(
        [str(exe), "demo", "--transcript-mode"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "SIMULATED" in text and "rebase-demo" in text
    assert "REGRESSED (confirmed)" in text
    assert "task run_branch (rebase)" in text and "task dispatch_alerts" in text
    outbox = list((tmp_path / "home" / "outbox").glob("*.json"))
    posts = [json.loads(f.read_text()) for f in outbox]
    assert [p["op"] for p in posts] == ["post"]
    assert "REGRESSED, confirmed" in posts[0]["payload"]["text"]
    assert (tmp_path / "home" / "dashboards" / "omni-seed-tts-trend.json").is_file()
    assert list((tmp_path / "home" / "reports").glob("*.html"))
