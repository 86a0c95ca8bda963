"""Imports the way upstream writes them: per-item locale (zh scored per character), failure
items without a reference filled from the dataset, and locale directories read by upstream's
meta.lst rules ('#' comments and rows without a target skipped)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.dataset import load_dataset
from omni_tasks.evidence.audio import write_audio
from tests.factories import small_artifact, write_json

runner = CliRunner()


def locale_dir(root: Path, rows: list[str]) -> Path:
    (root / "prompt-wavs").mkdir(parents=True)
    write_audio(str(root / "prompt-wavs" / "p.wav"), np.full(2400, 0.1, np.float32), 24_000)
    (root / "meta.lst").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_a_zh_locale_dir_loads_by_upstreams_rules(tmp_path: Path) -> None:
    zh = locale_dir(
        tmp_path / "zh",
        [
            "# seed-tts-eval zh",
            "z1|提示|prompt-wavs/p.wav|今天天气很好。",
            "z2|提示|prompt-wavs/p.wav|",
            "z3|提示|prompt-wavs/p.wav|你好，世界！",
        ],
    )
    ds = load_dataset(zh)
    assert [u.utt_id for u in ds.utterances] == ["z1", "z3"]
    assert ds.skipped == 2 and ds.lang == "zh"


def test_items_are_scored_in_their_locale_and_references_filled(db, tmp_path: Path) -> None:
    en = locale_dir(
        tmp_path / "en",
        [
            "e1|p|prompt-wavs/p.wav|Seven yellow bottles.",
            "e2|p|prompt-wavs/p.wav|Could you open the door?",
        ],
    )
    doc = {
        "date": "20261129-021500",
        "seed_tts_content_evaluated": 1,
        "seed_tts_content_error_mean": 1 / 6,
        "seed_tts_wer_eval_items": [
            {
                "utterance_id": "z1",
                "locale": "zh",
                "wer": 1 / 6,
                "reference_raw": "今天天气很好。",
                "asr_raw": "今天天气真好",
            },
            {"utterance_id": "e1", "locale": "en", "error": "request_failed", "detail": "x"},
            {"utterance_id": "e2", "locale": "en", "error": "no_pcm"},
        ],
    }
    art = write_json(tmp_path / "a.json", doc)
    out = runner.invoke(app, ["import", "vllm-omni", str(art), "--branch", "main"])
    assert out.exit_code == 0 and "2 failure items carry no reference text" in out.output
    zh = db.execute("SELECT ref_words, substitutions FROM omni.clip_grade WHERE utt_id = 'z1'")
    assert zh.fetchone() == {"ref_words": 6, "substitutions": 1}  # characters, not words
    db.execute("DELETE FROM omni.run")
    db.commit()
    out = runner.invoke(
        app, ["import", "vllm-omni", str(art), "--branch", "main", "--dataset", str(en)]
    )
    assert out.exit_code == 0 and "carry no reference" not in out.output
    rows = db.execute("SELECT utt_id, reference_text FROM omni.clip_audio").fetchall()
    refs = {r["utt_id"]: r["reference_text"] for r in rows}
    assert refs["e2"] == "Could you open the door?" and refs["e1"] == "Seven yellow bottles."
    key = db.execute("SELECT run_key FROM omni.run").fetchone()["run_key"]
    stats = json.loads(runner.invoke(app, ["stats", "--json", key]).stdout)
    assert stats["official"]["seed_tts_content_error_mean"] == pytest.approx(1 / 6, abs=0)


def test_the_harness_version_names_the_window_policy(db, tmp_path: Path) -> None:
    from tests.factories import ab_files

    base, cand = ab_files(tmp_path)
    bad = runner.invoke(
        app, ["import", "vllm-omni", str(base), "--branch", "main", "--harness-version", "9.9"]
    )
    assert (
        bad.exit_code == 1 and "unknown harness version '9.9'; known: 0.26.0, 0.28.0" in bad.output
    )
    a = runner.invoke(
        app, ["import", "vllm-omni", str(base), "--branch", "main", "--harness-version", "0.28.0"]
    ).stdout.strip()
    b = runner.invoke(
        app, ["import", "vllm-omni", str(cand), "--branch", "rebase", "--harness-version", "0.30.0"]
    ).stdout.strip()
    graders = {r["grader_id"] for r in db.execute("SELECT grader_id FROM omni.grading")}
    assert graders == {
        "artifact:vllm-omni-seed-tts/truncate30",
        "artifact:vllm-omni-seed-tts/whole-timestamps",
    }
    cmp = json.loads(
        runner.invoke(app, ["compare", "--baseline", a, "--candidate", b, "--json"]).stdout
    )
    assert cmp["verdict"] == "INFRA"
    assert "window policies differ: truncate30 (harness 0.26.0, 0.28.0) vs whole-timestamps" in (
        " ".join(cmp["reasons"])
    )


def test_secondary_scores_are_stored_and_shown_never_gated(db, tmp_path: Path) -> None:
    doc = small_artifact(4)
    for i, item in enumerate(doc["seed_tts_wer_eval_items"]):
        item["sim"], item["utmos"] = 0.5 + i / 10, 3.0 + i / 4
    key = runner.invoke(
        app, ["import", "vllm-omni", str(write_json(tmp_path / "s.json", doc)), "--branch", "main"]
    ).stdout.strip()
    stats = json.loads(runner.invoke(app, ["stats", key, "--json"]).stdout)
    assert stats["sim_mean"] == pytest.approx(0.65) and stats["utmos_mean"] == pytest.approx(3.375)
    shown = runner.invoke(app, ["stats", key]).stdout
    assert "speaker similarity (mean; not gated)" in shown and "0.6500" in shown
    row = db.execute("SELECT avg(sim) AS sim FROM omni.clip_grade").fetchone()
    assert row["sim"] == pytest.approx(0.65)

    doc["seed_tts_wer_eval_items"][0]["sim"] = 7.0  # not a cosine
    out = runner.invoke(
        app,
        ["import", "vllm-omni", str(write_json(tmp_path / "bad.json", doc)), "--branch", "rebase"],
    )
    assert out.exit_code != 0 and "'sim' must be a number in [-1, 1]" in out.output


def test_a_zh_set_runs_as_seed_tts_zh_and_a_mismatched_benchmark_is_refused(
    db, tmp_path: Path
) -> None:
    zh = locale_dir(tmp_path / "zh", ["z1|提示|prompt-wavs/p.wav|今天天气很好。"])
    args = [
        "bench",
        "--target",
        "simulator:clean",
        "--branch",
        "main",
        "--dataset",
        str(zh),
        "--transcript-mode",
        "--nightly",
        "2026-11-30",
    ]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert out.stdout.strip().splitlines()[-1].startswith("seed_tts_zh:")
    from omni_tasks.benchmarks.seed_tts.run import BenchError, BenchRequest, run_benchmark

    req = BenchRequest(
        target="simulator:clean",
        branch="main",
        dataset=str(zh),
        transcript_mode=True,
        benchmark="seed_tts_en",
    )
    with pytest.raises(BenchError, match=r"seed_tts_en does not fit .* a seed-tts-eval zh set"):
        run_benchmark(db, req, None, show_progress=False)
