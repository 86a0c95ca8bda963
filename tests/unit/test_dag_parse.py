"""DAG files parse light: the dag-processor re-parses every file every 30 s, and a parse past
`dagbag_import_timeout` drops the DAG from the night. A DAG file may import Airflow, pydantic
and the product's light modules (params, the deployment config's schema, the registry); the
product's heavy dependencies load inside task callables only. The CPU a parse costs is a
figure (bench/bench_dag_parse.py), not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"
# Each costs tens to hundreds of milliseconds to import, and no parse needs one.
HEAVY = (
    "scipy", "numpy", "plotly", "jinja2", "psycopg", "httpx", "starlette", "uvicorn", "pandas",
    "pyarrow", "av", "torch", "transformers", "faster_whisper", "ctranslate2", "whisper",
    "jiwer", "zhon", "soundfile", "fsspec", "kubernetes", "slack_sdk", "grafana_client",
)  # fmt: skip
PROBE = """
import json, runpy, sys
import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import dag, task
before = set(sys.modules)
runpy.run_path(sys.argv[1])
print(json.dumps(sorted({m.split(".")[0] for m in set(sys.modules) - before})))
"""


@pytest.mark.parametrize("dag_file", sorted(p.name for p in DAGS.glob("*.py")))
def test_a_dag_file_parses_without_the_products_heavy_dependencies(
    dag_file: str, tmp_path: Path
) -> None:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "false"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(DAGS / dag_file)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert sorted(loaded & set(HEAVY)) == []
