"""Ablations on the simulator: a regression whose extra failures come from the talker's
compiled path and vanish when the talker runs eager. `ablate` against the confirmed night names
that override ("regression gone") and the others "unchanged", within one full run of GPU."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from omni_tasks.jobs.ablate import AblateParams, AblateResult, run_ablations, summary
from tests.factories import seed_tts_corpus, simulated_night

NIGHT = dt.date(2026, 11, 24)
CANDIDATE = "simulator:rebase-compiled-talker"


@pytest.fixture
def night(db, tmp_path: Path, monkeypatch) -> Path:
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    get_settings.cache_clear()
    dataset = seed_tts_corpus(tmp_path / "en", 1088)
    simulated_night(db, dataset, NIGHT, CANDIDATE)
    return dataset


def test_ablations_name_the_knob(db, night: Path) -> None:
    p = AblateParams(
        nightly=NIGHT,
        candidate_target=CANDIDATE,
        baseline_target="simulator:main",
        transcript_mode=True,
        dataset=str(night),
    )
    r = run_ablations(db, p, NIGHT + dt.timedelta(days=1))
    assert r.reference.reproduced
    verdicts = {v.name: v for v in r.verdicts}
    assert verdicts["eager-talker"].verdict == "regression gone"
    lo, hi = verdicts["eager-talker"].left_ci
    assert lo > -0.02 and hi < 0.02  # what is left lies inside the practical minimum
    others = {n: v.verdict for n, v in verdicts.items() if n != "eager-talker"}
    assert others == dict.fromkeys(others, "unchanged") and len(others) == 3
    assert r.full_runs <= 1.0  # 4 ablations plus the two references, on the chosen clips
    # What ran is stored: every run an `ablate` run on the chosen clips, with its overrides.
    rows = db.execute(
        "SELECT run_key, n_expected, config FROM omni.run WHERE trigger = 'ablate'"
    ).fetchall()
    assert len(rows) == 6 and {r_["n_expected"] for r_ in rows} == {len(r.selection.clips)}
    eager = next(r_ for r_ in rows if ":eager-talker:" in r_["run_key"])
    assert eager["config"]["overrides"] == {"stages": [{"stage_id": 1, "enforce_eager": True}]}
    event = db.execute("SELECT text, details FROM omni.event WHERE kind = 'ablation_result'")
    row = event.fetchone()
    assert row["text"] == "ablations: regression gone under eager-talker"
    assert row["details"]["nightly"] == str(NIGHT) and len(row["details"]["ablations"]) == 4
    # One command reproduces it: the DAG's form, given the same parameters.
    command = row["details"]["reproduce"]
    assert command.startswith("airflow dags trigger omni_ablate --conf ")
    conf = json.loads(shlex.split(command)[-1])
    assert AblateParams(**conf).ablate_id == p.ablate_id
    # The night's report shows the table.
    from omni_tasks.reports.html import report_path

    report = report_path(p.series.slug, NIGHT).read_text()
    section = report.split(f"<h2>Ablations {p.ablate_id}</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<td>eager-talker</td>" in section and "<td>regression gone</td>" in section
    assert section.count("<td>unchanged</td>") == 3
    # Stage isolation: the talker's regression leaves the thinker's text alone.
    assert all(d.position is None and not d.missing for d in r.thinker)
    assert len(r.thinker) == len(r.selection.clips)
    assert "thinker texts equal on all" in section and "after the thinker" in section


def test_stage_isolation_finds_where_a_thinker_regression_starts(db, night: Path) -> None:
    """The rebase profile's extra failures start in the thinker (it leaks the system prompt,
    answers, babbles): its thinker text differs from main's, first token and position named."""
    from omni_tasks.jobs.ablate import summary

    p = AblateParams(
        nightly=NIGHT,
        candidate_target="simulator:rebase",
        baseline_target="simulator:main",
        transcript_mode=True,
        dataset=str(night),
        ablations=[
            {
                "name": "eager-talker",
                "overrides": {"stages": [{"stage_id": 1, "enforce_eager": True}]},
            }
        ],
    )
    r = run_ablations(db, p, NIGHT)
    differing = [d for d in r.thinker if d.position is not None]
    assert differing and all(d.baseline_token != d.candidate_token for d in differing)
    assert "thinker texts differ on" in summary(p, r)


def test_a_gate_never_reads_ablation_runs(db, night: Path) -> None:
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.decide import decide_series
    from omni_tasks.series import Series

    p = AblateParams(
        nightly=NIGHT,
        candidate_target=CANDIDATE,
        baseline_target="simulator:main",
        transcript_mode=True,
        dataset=str(night),
        ablations=[
            {
                "name": "eager-talker",
                "overrides": {"stages": [{"stage_id": 1, "enforce_eager": True}]},
            }
        ],
    )
    run_ablations(db, p, NIGHT)
    before = db.execute("SELECT verdict, mcnemar_p FROM omni.gate_decision").fetchall()
    decide_series(
        db,
        NightQuestion(Series.of({"benchmark": "seed_tts_en"}), NIGHT, "main", ("main", "rebase")),
        load_policy(),
    )
    assert db.execute("SELECT verdict, mcnemar_p FROM omni.gate_decision").fetchall() == before


def test_an_override_for_a_stage_the_deploy_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="stage_id"):
        AblateParams(
            nightly=NIGHT,
            candidate_target=CANDIDATE,
            baseline_target="simulator:main",
            ablations=[{"name": "x", "overrides": {"stages": [{"enforce_eager": True}]}}],
        )


def _demo_ablation(db: Any, **fields: Any) -> tuple[AblateParams, AblateResult]:
    """Issue 45's night: the 100-clip demo set, main against rebase-compiled-talker at seed 5
    (REGRESSED on a handful of clips), ablated with the shipped four."""
    simulated_night(db, Path("demo"), NIGHT, CANDIDATE, seed=5)
    p = AblateParams(
        nightly=NIGHT,
        candidate_target=CANDIDATE,
        baseline_target="simulator:main",
        transcript_mode=True,
        stage_isolation=False,
        **fields,
    )
    return p, run_ablations(db, p, NIGHT + dt.timedelta(days=1))


def test_a_modest_regression_on_the_demo_set_is_decided_by_repeats(db) -> None:
    """One fresh seed did not reproduce issue 45's night (7 broken against 3), so every
    ablation read "not reproduced". Seeds are now added until it is decided, and the result
    says what the budget bought."""
    p, r = _demo_ablation(db, budget=6.0)
    assert r.reference.reproduced and r.ablated.decided
    assert len(r.ablated.seeds) >= 2  # one seed was not enough
    verdicts = {v.name: v.verdict for v in r.verdicts}
    assert verdicts.pop("eager-talker") == "regression gone"
    assert set(verdicts.values()) == {"unchanged"}
    assert r.full_runs <= p.budget
    # Each arm's run at each seed it ran is stored under its own key.
    keys = db.execute("SELECT run_key FROM omni.run WHERE trigger = 'ablate'").fetchall()
    assert len(keys) == sum(len(v) for v in r.run_keys.values())
    assert {k for ks in r.run_keys.values() for k in ks} == {k["run_key"] for k in keys}
    row = db.execute("SELECT details FROM omni.event WHERE kind = 'ablation_result'").fetchone()
    assert row["details"]["seeds"] == list(r.ablated.seeds)
    assert f"{len(r.ablated.seeds)} run:" in row["details"]["budget"]


def test_a_budget_too_small_for_a_second_round_says_what_it_allowed(db) -> None:
    """The same night at the default budget (one full run: a round of six arms on 33 clips is
    already two): one round, which does not reproduce it, and the result says so with how
    much of the night the fresh runs still allow, not that the regression is gone."""
    p, r = _demo_ablation(db)
    assert r.ablated.seeds == (p.seed,) and "1 planned" in r.ablated.arithmetic
    assert not r.reference.reproduced
    assert {v.verdict for v in r.verdicts} == {"not reproduced"}
    text = summary(p, r)
    assert "not reproduced within the budget" in text and "the night showed" in text
