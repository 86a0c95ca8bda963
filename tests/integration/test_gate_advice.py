"""The gate advisor on imported A/A histories whose truth is known by simulation: twenty
nights of one commit from a clip-level model (a stochastic hard set, heavy-tailed runaways)
give a false-fail chance for upstream's mean-WER ≤ 0.35 gate and a 1-in-50 threshold whose
intervals hold the model's own values; a multiple-choice series gets the same advice from its
per-question rows; `--markdown` is a PR description with the figures; a runaway tail too thin
to fit gets no advice, and says why."""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import replace
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from bench.artifacts import ClipModel, parse_artifact
from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.series import DEFAULT_MODEL
from omni_tasks.store.runs import save_run
from tests.factories import write_json

runner = CliRunner()
D0 = dt.date(2026, 10, 1)
COMMIT = "a1" * 20
# Enough runaways (WER past 1) in twenty nights to fit their tail: about 230.
MODEL = ClipModel(
    n=240,
    hard=80,
    hard_rate=(0.3, 0.7),
    runaway_alpha=2.5,
    runaway_share=0.5,
    runaway_scale=4,
    seed=11,
)
QUIET = replace(MODEL, runaway_share=0.0)  # no runaways: short histories with no tail to fit
# Heavy runaways, but about four a night: too few past the tail's start to fit it.
THIN = replace(MODEL, hard=30, runaway_alpha=1.6, runaway_share=0.25, runaway_scale=6)


def import_nights(db: Any, tmp: Path, model: ClipModel, nights: int, seed: int) -> None:
    errors = model.errors(np.random.default_rng(seed), nights)
    for i, e in enumerate(errors):
        day = D0 + dt.timedelta(days=i)
        doc = model.artifact(e, day.strftime("%Y%m%d-020000"))
        art = parse_artifact(write_json(tmp / f"{day}.json", doc), branch="main", commit=COMMIT)
        save_run(db, art.spec, art.clips, (ARTIFACT_GRADER, art.grades))
    db.commit()


def truth(model: ClipModel, threshold: float, target: float) -> tuple[float, float]:
    words, _ = model.layout()
    figures = (model.errors(np.random.default_rng(99), 200_000) / words).mean(axis=1)
    return float((figures > threshold).mean()), float(np.quantile(figures, 1 - target))


def advise(*args: str) -> Any:
    out = runner.invoke(app, ["gates", "advise", "--benchmark", "seed_tts_en", *args])
    assert out.exit_code == 0, out.output
    return out


def test_the_advice_holds_the_simulations_truth(db, tmp_path: Path) -> None:
    import_nights(db, tmp_path, MODEL, 20, seed=5)
    true_p, true_q = truth(MODEL, 0.35, 0.02)
    (a,) = json.loads(advise("--threshold", "0.35", "--json").stdout)
    assert a["nights"] == 20 and a["items"] == 240 and a["method"].startswith("per-item")
    assert a["basis"] == f"20 nights of commit {COMMIT}"
    lo, hi = a["p_fail_interval"]
    assert lo <= true_p <= hi and hi - lo < 0.5
    slo, shi = a["suggested_interval"]
    assert slo <= true_q <= shi
    assert a["suggested_threshold"] > 0.35  # a 2 % false-fail rate needs a looser line here
    assert a["detectable_items"] >= 1 and a["tail_mde_items"] >= 1
    h = a["history"]
    assert h["nights"] == 20 and 0 <= h["failing"] < 20 and not h["never_passed"]

    md = advise("--threshold", "0.35", "--markdown").stdout
    assert "## Gate `seed_tts_content_error_mean <= 0.35`" in md
    assert f"fails on {100 * a['p_fail']:.1f} %" in md
    assert "Suggested line for the test file" in md and "catches (80 % power)" in md
    text = advise("--threshold", "0.35").stdout
    assert "P(fail | no change)" in text and "suggested threshold for 1 in 50 nights" in text
    d = a["design"]  # the same gate in TensorRT-LLM's form, beside today's P(fail)
    assert (d["alpha"], d["beta"], d["n"]) == (0.02, pytest.approx(0.2), 240)
    assert "as a TensorRT-LLM reference: α 2.0 %, β 20.0 %" in text and "n 240 →" in text


def test_a_tail_too_thin_to_fit_is_refused_with_its_counts(db, tmp_path: Path) -> None:
    """Six nights of heavy runaways, about four a night: no advice, and the reason names the
    runaways past the tail's start against the thirty a fit needs; the nightly stores none."""
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.gate_advice import record_night

    import_nights(db, tmp_path, THIN, 6, seed=3)
    errors = THIN.errors(np.random.default_rng(3), 6) / THIN.layout()[0]
    runaways = int((errors > 1.0).sum())  # what was imported, counted here
    out = runner.invoke(app, ["gates", "advise", "--benchmark", "seed_tts_en", "--json"])
    assert out.exit_code == 1 and "the runaway tail is too thin to fit" in out.output
    assert f"of {runaways} runaways (WER past 1)" in out.output and "a fit needs 30" in out.output
    assert (
        record_night(
            db, NightlyParams(benchmark="seed_tts_en"), D0 + dt.timedelta(days=5), load_policy()
        )
        == 0
    )


def test_a_gate_below_the_usual_figure_never_passes_and_says_it_protects_nothing(
    db, tmp_path: Path
) -> None:
    import_nights(db, tmp_path, QUIET, 8, seed=6)
    (a,) = json.loads(advise("--threshold", "0.01", "--json").stdout)
    assert a["p_fail"] > 0.99 and a["history"]["never_passed"]
    assert a["history"]["current_streak"] == 8 and a["detectable_shift"] < 0
    assert any("protects nothing" in n for n in a["notes"])


def test_a_reference_this_history_prints_is_then_judged_for_its_sku_and_protocol(
    db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_nights(db, tmp_path, QUIET, 8, seed=7)
    empty = tmp_path / "references.yaml"
    empty.write_text("version: 1\nsuites: {}\n")
    monkeypatch.setenv("OMNI_GATE_REFERENCES", str(empty))
    get_settings.cache_clear()
    first = advise("--threshold", "0.35", "--sku", "H100").stdout
    assert "no reference registered for seed_tts_en" in first and "on H100 over chat" in first
    printed = first.split("in the references file:\n", 1)[1]
    mine = tmp_path / "mine.yaml"
    mine.write_text("version: 1\n" + printed)
    monkeypatch.setenv("OMNI_GATE_REFERENCES", str(mine))
    get_settings.cache_clear()
    try:
        (a,) = json.loads(advise("--threshold", "0.35", "--sku", "h100", "--json").stdout)
        other = advise("--threshold", "0.35", "--sku", "H100", "--protocol", "realtime").stdout
    finally:
        monkeypatch.delenv("OMNI_GATE_REFERENCES")
        get_settings.cache_clear()
    entry = yaml.safe_load(printed)["suites"]["seed_tts_en"]
    (ref,) = entry["models"][DEFAULT_MODEL]
    assert a["reference"].startswith(f"seed_tts_en · {DEFAULT_MODEL} · H100 · chat (8 nights")
    d = a["design"]
    assert (entry["alpha"], entry["beta"]) == (0.02, 0.2)  # as a person would write them
    assert (d["alpha"], d["n"], d["sigma"]) == (0.02, 240, entry["sigma"])
    margin = NormalDist().inv_cdf(0.98) * entry["sigma"] * math.sqrt(2 / 240)
    assert d["threshold"] == pytest.approx(ref["accuracy"] + margin)  # a WER stays below
    assert 0 <= a["design_p_fail"] <= 1
    assert "no reference registered" in other and "over realtime" in other


def test_a_series_without_a_known_gate_asks_for_a_threshold(db) -> None:
    out = runner.invoke(app, ["gates", "advise", "--benchmark", "librispeech"])
    assert out.exit_code == 2 and "pass --threshold" in out.output


def test_a_multiple_choice_series_is_advised_from_its_questions(db, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    p_right = np.concatenate([np.full(150, 0.97), rng.uniform(0.3, 0.8, 50)])
    for i in range(20):
        right = rng.random(len(p_right)) < p_right
        items = [
            {
                "request_id": str(k),
                "question_id": f"q{k:03d}",
                "gold": "A",
                "predicted": "A" if r else "B",
                "correct": bool(r),
                "task": "t",
                "domain": "d",
                "sub_category": "s",
                "duration": "short",
            }
            for k, r in enumerate(right)
        ]
        doc = {
            "date": (D0 + dt.timedelta(days=i)).strftime("%Y%m%d-020000"),
            "videomme_accuracy": float(right.mean()),
            "videomme_eval_items": items,
        }
        path = write_json(tmp_path / f"v{i}.json", doc)
        out = runner.invoke(
            app, ["import", "vllm-omni", str(path), "--branch", "main", "--commit", COMMIT]
        )
        assert out.exit_code == 0, out.output
    sims = (rng.random((100_000, len(p_right))) < p_right).mean(axis=1)
    true_p = float((sims < 0.85).mean())
    out = runner.invoke(
        app, ["gates", "advise", "--benchmark", "videomme", "--threshold", "0.85", "--json"]
    )
    assert out.exit_code == 0, out.output
    (a,) = json.loads(out.stdout)
    assert a["figure"] == "videomme_accuracy" and a["comparator"] == ">=" and a["items"] == 200
    lo, hi = a["p_fail_interval"]
    assert lo <= true_p <= hi
    assert a["suggested_threshold"] < 0.85 < float(np.median(sims)) + 0.05
    assert a["detectable_items"] >= 1  # a drop in accuracy counted in newly wrong answers


def test_a_lanes_config_gate_replaces_the_tables(db, tmp_path: Path) -> None:
    import_nights(db, tmp_path, QUIET, 6, seed=8)
    config = tmp_path / "fleet.yaml"
    config.write_text(
        "version: 2\nlanes: {default: {queue: gpu, pool: gpu}}\nseries:\n"
        "  - {benchmark: seed_tts_en, lane: default, branches: [main], baseline: main,\n"
        "     targets: {main: 'simulator:main'},\n"
        "     upstream_gate: [{figure: seed_tts_content_error_mean, comparator: '<=',\n"
        "                      threshold: 0.9, constant: _ROCM_MAX_WER}]}\n"
    )
    (a,) = json.loads(advise("--config", str(config), "--json").stdout)
    assert a["threshold"] == 0.9 and a["gate"] == "seed_tts_content_error_mean <= 0.9"
    assert "_ROCM_MAX_WER = " in advise("--config", str(config), "--markdown").stdout
    (table,) = json.loads(advise("--json").stdout)  # no config: upstream's table, 0.35
    assert table["threshold"] == 0.35
    config.write_text(
        config.read_text().replace(
            "upstream_gate: [{figure: seed_tts_content_error_mean, comparator: '<=',\n"
            "                      threshold: 0.9, constant: _ROCM_MAX_WER}]",
            "upstream_gate: none",
        )
    )
    out = runner.invoke(
        app, ["gates", "advise", "--benchmark", "seed_tts_en", "--config", str(config)]
    )
    assert out.exit_code == 2 and "no upstream gate known" in out.output


def test_the_nightly_stores_the_advice_and_the_report_shows_it(db, tmp_path: Path) -> None:
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.gate_advice import record_night
    from omni_tasks.reports.html import nightly_report
    from omni_tasks.series import Series

    import_nights(db, tmp_path, QUIET, 6, seed=9)
    last = D0 + dt.timedelta(days=5)
    params = NightlyParams(benchmark="seed_tts_en")
    assert record_night(db, params, D0 + dt.timedelta(days=1), load_policy()) == 0  # 2 nights
    assert record_night(db, params, last, load_policy()) == 1
    row = db.execute("SELECT gate, nights, threshold FROM omni.gate_advice").fetchone()
    assert row == {"gate": "seed_tts_content_error_mean <= 0.35", "nights": 6, "threshold": 0.35}
    page = nightly_report(db, Series("seed_tts_en"), last, 0.5)
    assert "<h2>Upstream gate advice</h2>" in page
    assert "seed_tts_content_error_mean &lt;= 0.35" in page and "6 nights of commit" in page
    assert "as TensorRT-LLM sets it" in page and "of nights by the model)" in page


def test_the_nightly_advice_reads_a_bounded_window_of_history(db, tmp_path: Path) -> None:
    """A night's advice reads the last NIGHTLY_WINDOW_DAYS of the series, however long it has
    run: its cost does not grow with history (the audit's year-long series never finished)."""
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.gate_advice import NIGHTLY_WINDOW_DAYS, record_night

    import_nights(db, tmp_path, QUIET, 8, seed=9)
    params = NightlyParams(benchmark="seed_tts_en")
    late = D0 + dt.timedelta(days=1 + NIGHTLY_WINDOW_DAYS)  # two nights have left the window
    assert record_night(db, params, late, load_policy()) == 1
    assert db.execute("SELECT nights FROM omni.gate_advice").fetchone() == {"nights": 6}
    gone = D0 + dt.timedelta(days=6 + NIGHTLY_WINDOW_DAYS)  # and then all but one have
    assert record_night(db, params, gone, load_policy()) == 0
