"""Same-morning confirmation end to end, in-process on real Postgres and the simulator
(transcript mode): the demo's night is REGRESSED but not confirmed; the series' `rerun` job
re-runs the items exactly one branch broke on both branches at fresh seeds, stores the result,
decides the night again, and the alert opens saying "confirmed the same morning". The Airflow
run of the same path is `make demo` (tests/integration/test_demo_commands.py) and the
scheduler's, tests/reliability/test_series_isolation.py."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.rerun import RERUN_SEED_BASE
from omni_tasks.contracts import BranchPlan
from omni_tasks.deployment.night import resolve_night
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs import nightly
from omni_tasks.jobs.decide import decide_fleet
from omni_tasks.jobs.demo import write_config
from omni_tasks.jobs.rerun import rerun_series
from omni_tasks.store import results

NIGHT = dt.date(2026, 11, 20)


def _params(tmp_path: Path, **over: Any) -> NightlyParams:
    """The demo's deployment config (its simulator pair), transcript mode, seed 42."""
    path = write_config(tmp_path / "nightly.yaml", {"transcript_mode": True})
    config = {**yaml.safe_load(path.read_text()), **over}
    (params,) = resolve_night({"seeds": [42]}, yaml.safe_dump(config)).series
    return params


def _night(db: Any, params: NightlyParams, policy: GatePolicy) -> None:
    """What the nightly's tasks do before `rerun`: heads, runs, statistics, decision."""
    for plan in nightly.record_heads(db, [params], NIGHT, backfill=False):
        nightly.run_branch(db, params, BranchPlan.from_json(plan.to_json()), trigger="nightly")
    nightly.summarize_night(db, [params], NIGHT, policy)
    assert not decide_fleet(db, NIGHT, policy, [params]).failed


def _decision(db: Any) -> dict[str, Any]:
    (row,) = db.execute(
        "SELECT verdict, confirmed, reasons, mcnemar_p_holm FROM omni.gate_decision"
    ).fetchall()
    return dict(row)


def test_a_regressed_unconfirmed_night_is_confirmed_the_same_morning(db, tmp_path: Path) -> None:
    params = _params(tmp_path)
    policy = load_policy()
    _night(db, params, policy)
    before = _decision(db)
    assert before["verdict"] == "REGRESSED" and not before["confirmed"], before
    assert before["mcnemar_p_holm"] > policy.confirm_p  # one night cannot confirm it
    assert db.execute("SELECT count(*) AS n FROM omni.alert_outbox").fetchone()["n"] == 0
    night_runs = {r["run_key"]: r for r in db.execute("SELECT run_key, seed FROM omni.run")}
    # The discordant items: broken in exactly one of the night's two gradings.
    broken = db.execute(
        "SELECT count(*) AS n FROM (SELECT c.utt_id FROM omni.clip_grade c "
        "JOIN omni.grading g USING (grading_id) GROUP BY c.utt_id "
        "HAVING count(*) FILTER (WHERE c.wer > 0.5 OR c.wer IS NULL) = 1) AS one"
    ).fetchone()["n"]

    lines = rerun_series(db, [params], NIGHT, policy)

    (line,) = lines
    after = _decision(db)
    assert after["verdict"] == "REGRESSED" and after["confirmed"], after
    (said,) = [r for r in after["reasons"] if r.startswith("confirmed the same morning: ")]
    assert said in line
    # Both branches, rerun_seeds fresh seeds each, interleaved, on the discordant items
    # only; stored as their own trigger, so no night reads them.
    reruns = db.execute(
        "SELECT run_key, branch, seed, trigger, n_expected FROM omni.run "
        "WHERE trigger = 'rerun' ORDER BY run_id"
    ).fetchall()
    seeds = [RERUN_SEED_BASE + i for i in range(policy.rerun_seeds)]
    assert [(r["branch"], r["seed"]) for r in reruns] == [
        ("main", seeds[0]),
        ("rebase", seeds[0]),
        ("rebase", seeds[1]),
        ("main", seeds[1]),
    ]
    assert {r["seed"] for r in reruns}.isdisjoint(r["seed"] for r in night_runs.values())
    stored = db.execute("SELECT result, run_keys FROM omni.rerun").fetchone()
    result = stored["result"]
    assert stored["run_keys"] == [r["run_key"] for r in reruns]
    assert {r["n_expected"] for r in reruns} == {result["items"]} and result["items"] == broken
    assert result["full_runs"] <= policy.rerun_budget
    assert result["p_value"] < policy.rerun_alpha
    assert f"{result['candidate_worse']} of {result['items']} re-run items" in said
    assert {r.run_key for r in results.nightly_runs(db, params.series, NIGHT)} == set(night_runs)
    # The alert opened on it, and its message says how it was confirmed.
    (post,) = db.execute("SELECT kind, payload FROM omni.alert_outbox").fetchall()
    assert post["kind"] == "post"
    assert "REGRESSED, confirmed" in post["payload"]["text"]
    assert said in json.dumps(post["payload"]["blocks"], ensure_ascii=False)

    # Idempotent: a retried task runs nothing and changes nothing.
    assert rerun_series(db, [params], NIGHT, policy) == []
    assert db.execute("SELECT count(*) AS n FROM omni.run WHERE trigger = 'rerun'").fetchone()[
        "n"
    ] == len(reruns)


def test_a_re_run_over_its_budget_is_skipped_and_says_so(db, tmp_path: Path) -> None:
    # A tenth of a full run holds 2 of the demo's 100 items at 2 seeds on both branches.
    params = _params(tmp_path)
    policy = load_policy().model_copy(update={"rerun_budget": 0.1})
    _night(db, params, policy)
    assert _decision(db)["verdict"] == "REGRESSED"
    (line,) = rerun_series(db, [params], NIGHT, policy)
    assert "same-morning re-run skipped" in line and "over the 0.1 budget" in line
    after = _decision(db)
    assert not after["confirmed"]
    assert any(r.startswith("same-morning re-run skipped") for r in after["reasons"])
    assert (
        db.execute("SELECT count(*) AS n FROM omni.run WHERE trigger = 'rerun'").fetchone()["n"]
        == 0
    )
    assert db.execute("SELECT count(*) AS n FROM omni.alert_outbox").fetchone()["n"] == 0


def test_a_re_run_that_could_not_confirm_a_min_effect_step_is_skipped(db, tmp_path: Path) -> None:
    # The demo's night (8 of 100 clips broke on the candidate alone, none on the baseline; its
    # history window is refused, too few nights) confirms a 2-point step 23.5 % of the time
    # (analysis/rerun.py `power`): at rerun_power .5 it is not re-run, and the decision says
    # why.
    params = _params(tmp_path)
    policy = load_policy().model_copy(update={"rerun_power": 0.5})
    _night(db, params, policy)
    assert _decision(db)["verdict"] == "REGRESSED"
    (line,) = rerun_series(db, [params], NIGHT, policy)
    assert (
        "same-morning re-run skipped: 8 discordant items of 100: one night's noise is 1.50 "
        "points (from tonight's ψ 0.023), so a re-run would confirm a 2.0-point step "
        "(p < 0.02) only 24 % of the time, below rerun_power 0.5"
    ) in line
    after = _decision(db)
    assert not after["confirmed"]
    assert any("cannot tell such a step from noise" in r for r in after["reasons"])
    assert (
        db.execute("SELECT count(*) AS n FROM omni.run WHERE trigger = 'rerun'").fetchone()["n"]
        == 0
    )
    assert db.execute("SELECT count(*) AS n FROM omni.alert_outbox").fetchone()["n"] == 0
