"""`omni-tasks demo`: the import → statistics → paired A/B → gate path end to end on the
embedded default, with simulated artifacts shaped like the reported A/B (REFERENCE.md §3).

Until the synthesis and Airflow pieces land, this is the honest end-to-end path the platform
has: everything past "a results artifact exists" is the real code on a real Postgres.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.service import compare_keys
from omni_tasks.importers.vllm_omni import ARTIFACT_GRADER, parse_artifact
from omni_tasks.nightly import decide_night
from omni_tasks.store.runs import save_run
from omni_tasks.synthetic import ab_artifacts

BASELINE, CANDIDATE = "main", "dev/vllm-align"


@dataclass(frozen=True)
class DemoResult:
    out_dir: Path
    nights: list[dt.date]
    decisions: list[dict[str, Any]]
    last_comparison: dict[str, Any]


def run_demo(
    conn: psycopg.Connection[Any],
    home: Path,
    policy: GatePolicy,
    *,
    nights: int,
    last_night: dt.date,
) -> DemoResult:
    out = home / "demo"
    out.mkdir(parents=True, exist_ok=True)
    dates = [last_night - dt.timedelta(days=nights - 1 - i) for i in range(nights)]
    decisions: list[dict[str, Any]] = []
    comparison: dict[str, Any] = {}
    for i, night in enumerate(dates):
        base_doc, cand_doc = ab_artifacts(seed=1000 + i, date=night.strftime("%Y%m%d-020000"))
        keys = []
        for branch, doc in ((BASELINE, base_doc), (CANDIDATE, cand_doc)):
            path = out / f"{night}_{branch.replace('/', '_')}.json"
            path.write_text(json.dumps(doc), encoding="utf-8")
            art = parse_artifact(path, branch=branch, commit=f"sim{branch[:4]}{i:04d}")
            keys.append(save_run(conn, art.spec, art.clips, (ARTIFACT_GRADER, art.grades)).run_key)
        comparison = compare_keys(conn, keys[0], keys[1], policy.primary_tau, policy)
        decisions += decide_night(
            conn,
            night,
            policy,
            benchmark=art.spec.benchmark,
            baseline_branch=BASELINE,
            expect=(BASELINE, CANDIDATE),
        ).decisions
    (out / "gate_decisions.json").write_text(json.dumps(decisions, indent=2, default=str))
    (out / "last_comparison.json").write_text(json.dumps(comparison, indent=2, default=str))
    return DemoResult(out, dates, decisions, comparison)
