"""Omni-DuplexEval as upstream writes it: score files shaped as `evaluate_sample` writes them,
summarized by upstream's own `summarize_scores` (unmodified) into `results/summary.json`, are
imported as a summary-only night whose figures are upstream's, under upstream's protocol pin;
the stored upstream verdict is what its CI guard asserts at a threshold."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.gates.table import gates_of
from omni_tasks.importers.buildkite import upstream_verdicts
from omni_tasks.series import Series
from tests.conformance.upstream import WHEELS, Upstream

# The DuplexEval guard and its summarizer ship from vllm-omni 0.30 on.
WITH_DUPLEX = [v for v in sorted(WHEELS) if Version(v) >= Version("0.30.0")]
EVAL = "vllm_omni.benchmarks.duplex.omni_duplex_eval_eval"
METRICS = "vllm_omni.benchmarks.duplex.omni_duplex_eval_metrics"
RTD = ["RTD_world_knowledge", "RTD_counting", "RTD_OCR"]
SERIES = Series("duplex_eval", "openbmb/MiniCPM-o-4_5", "cuda-h100")
PR = {"PR_correction": "correction", "PR_event_reminder": "proactive_reminder"}


def score_files(upstream: Upstream, root: Path, rng: random.Random) -> None:
    """One score file per sample, in its split's folder, as `evaluate_sample` writes them."""
    temporal = upstream.load(METRICS, ["summarize_temporal_results"])["summarize_temporal_results"]
    for split in RTD:
        for i in range(4):
            sentences = [
                {
                    "sentence_start": float(s),
                    "sentence_duration": 1.5,
                    "is_relevant": rng.choice([0, 1, 1]),
                    "temporal_score": rng.randint(0, 3),
                    "error": None if rng.random() > 0.1 else "No valid temporal window",
                }
                for s in range(rng.randint(1, 5))
            ]
            row = {
                "id": f"{split}-{i}",
                "family": "rtd",
                "temporal": {"sentences": sentences, "summary": temporal(sentences)},
                "content": {"content_score": rng.choice([0.0, 1.0, 2.0, 3.0])},
            }
            write(root / split / f"{i}.json", row)
    for split, task in PR.items():
        for i in range(5):
            ok = rng.random() < 0.4
            row = {"id": f"{split}-{i}", "family": "pr", "task_type": task}
            row["pr"] = {"events": [], "all_success": ok, "total_score": int(ok)}
            write(root / split / f"{i}.json", row)


def write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


@pytest.mark.parametrize("upstream", WITH_DUPLEX, indirect=True)
def test_upstreams_summary_is_imported_with_its_figures_and_pin(
    upstream: Upstream, tmp_path: Path
) -> None:
    summarize = upstream.load(EVAL, ["summarize_scores"])["summarize_scores"]
    pin = upstream.load(METRICS, ["PROTOCOL_PIN"])["PROTOCOL_PIN"]
    assert pin == PROTOCOL_PIN  # our series' pin is the one this release judges under
    score_files(upstream, tmp_path / "scores", random.Random(7))
    summary = summarize(tmp_path / "scores")
    artifact = tmp_path / "results" / "summary.json"
    write(artifact, summary)

    parsed = benchmarks.import_artifact(
        artifact, ImportOptions(branch="main", built=dt.date(2026, 11, 28))
    )
    got = parsed.spec.summary
    assert parsed.spec.benchmark == "duplex_eval" and parsed.spec.status == "summary_only"
    assert parsed.spec.nightly == dt.date(2026, 11, 28) and parsed.warnings == []
    assert got["protocol_pin"] == pin and got["duplex_samples"] == summary["samples"] == 22
    assert got["rtd.mean_content_score"] == summary["rtd"]["mean_content_score"]
    assert got["rtd.mean_avg_temporal_score"] == summary["rtd"]["mean_avg_temporal_score"]
    assert got["pr.mean_all_success"] == summary["pr"]["mean_all_success"]
    for task, means in summary["rtd"]["by_task"].items():
        assert got[f"rtd.by_task.{task}.mean_content_score"] == means["mean_content_score"]
    for task, rate in summary["pr"]["by_task"].items():
        assert got[f"pr.by_task.{task}"] == rate

    # The guard's assertions (`rtd.get(...) >= _MIN_...`) at thresholds either side of the
    # night's figure: our stored verdict is the guard's.
    gates = gates_of(SERIES)
    assert {g.figure for g in gates} == {
        "rtd.mean_content_score",
        "rtd.mean_avg_temporal_score",
        "pr.mean_all_success",
    }
    for gate in gates:
        part, name = gate.figure.split(".")
        figure = summary[part][name]
        for threshold in (0.0, figure, figure + 0.01):
            guard = "pass" if summary[part].get(name, 0.0) >= threshold else "fail"
            assert gate.verdict(got[gate.figure], threshold) == guard
    verdicts = upstream_verdicts(SERIES, parsed, parsed.spec.nightly)
    assert {v["verdict"] for v in verdicts} == {"pass"}  # record mode: every threshold 0.0
