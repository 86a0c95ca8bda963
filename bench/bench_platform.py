"""Platform overhead per nightly: everything but synthesis and ASR, for 2 branches × 1088
clips — store, statistics, paired compare + gate + alert plan, dashboards/report, alert
delivery. Goal: < 10 s. The baseline printed beside it is the raw COPY of the same clip rows
(the I/O floor on this box), measured in the same run.

    .venv/bin/python bench/bench_platform.py
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path

from artifacts import ab_artifacts, parse_artifact
from common import raw_copy, scratch_db

from omni_tasks.alerts.slack import default_sink, dispatch
from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.config import get_settings
from omni_tasks.contracts.night import NightQuestion
from omni_tasks.gates.policy import load_policy
from omni_tasks.grafana.dashboards import write_all
from omni_tasks.jobs import decide, nightly
from omni_tasks.series import Series
from omni_tasks.store.runs import save_run


def main() -> None:
    night = dt.date(2026, 11, 28)
    policy = load_policy()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OMNI_HOME"] = tmp
        get_settings.cache_clear()
        arts = []
        for branch, doc in zip(("main", "rebase"), ab_artifacts(seed=3), strict=True):
            path = Path(tmp) / f"{branch}.json"
            path.write_text(json.dumps(doc))
            arts.append(parse_artifact(path, branch=branch, nightly=night))
        with scratch_db() as conn:
            stages: dict[str, float] = {}
            t0 = time.perf_counter()
            keys = [
                save_run(conn, a.spec, a.clips, (ARTIFACT_GRADER, a.grades)).run_key for a in arts
            ]
            stages["store 2 runs (parse excluded)"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            nightly.summarize(conn, keys, policy)
            stages[f"statistics ({len(policy.taus)} τ × 2 runs)"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = decide.decide_series(
                conn,
                NightQuestion(Series("seed_tts_en"), night, "main", ("main", "rebase")),
                policy,
            )
            stages["compare + gate + alert plan"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            nightly.refresh_outputs(conn, [Series("seed_tts_en")], night, policy.primary_tau)
            write_all(Path(tmp) / "dashboards")
            stages["dashboards JSON + HTML report"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            import contextlib
            import io

            with contextlib.redirect_stdout(io.StringIO()):
                dispatch(conn, default_sink())
            stages["alert delivery (local outbox)"] = time.perf_counter() - t0

            # Baseline: raw COPY of the same clip rows into fresh runs.
            t0 = time.perf_counter()
            for i, a in enumerate(arts):
                raw_copy(conn, f"floor{i}", a.clips, a.grades)
            floor = time.perf_counter() - t0
    total = sum(stages.values())
    verdict = out.decisions[0].verdict if out.decisions else "n/a"
    print(f"nightly platform overhead, 2 branches × 1088 clips (verdict {verdict})")
    for name, s in stages.items():
        print(f"  {name:38} {s:7.3f} s")
    print(f"  {'total':38} {total:7.3f} s   (goal < 10 s: {'met' if total < 10 else 'MISSED'})")
    print(
        f"  raw COPY of the same rows (floor)      {floor:7.3f} s   total = {total / floor:.1f}× floor"
    )


if __name__ == "__main__":
    main()
