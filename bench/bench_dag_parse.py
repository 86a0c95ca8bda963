"""What parsing each DAG file costs the dag-processor, in CPU seconds, against bare Airflow
with the DAG files' own imports (pendulum, airflow.sdk, the trigger operator) in the same run:
each measured in a fresh interpreter (as a parse is), the median of --repeat runs. The goal is
≤ 0.3 s above bare for every file (the dag-processor re-parses every file every 30 s, and a
parse past `dagbag_import_timeout` drops the DAG from the night).

    python bench/bench_dag_parse.py [--repeat 5] [DAG_FILE ...]   # default: every file in dags/
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DAGS = Path(__file__).resolve().parents[1] / "dags"
PROBE = """
import resource, runpy, sys
import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import dag, task
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = cpu()
if len(sys.argv) > 1:
    runpy.run_path(sys.argv[1])
print(cpu(), cpu() - t0)
"""


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True
    )
    total, parse = out.stdout.split()[-2:]
    return float(total), float(parse)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("files", nargs="*", type=Path, help="DAG files (default: every one in dags/)")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="airflow-home-")
    env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "false"}
    bare = statistics.median(measure([], env)[0] for _ in range(args.repeat))
    print(f"bare Airflow + the DAG files' imports: {bare:.2f} s CPU (median of {args.repeat})")
    print(f"{'DAG file':28} {'CPU s':>6} {'above bare':>11} {'ratio':>6}")
    worst = 0.0
    for path in args.files or sorted(DAGS.glob("*.py")):
        runs = [measure([str(path)], env) for _ in range(args.repeat)]
        total = statistics.median(r[0] for r in runs)
        above = statistics.median(r[1] for r in runs)
        worst = max(worst, above)
        print(f"{path.name:28} {total:6.2f} {above:11.2f} {total / bare:6.2f}")
    print(f"worst parse above bare Airflow: {worst:.2f} s CPU (goal ≤ 0.30)")


if __name__ == "__main__":
    main()
