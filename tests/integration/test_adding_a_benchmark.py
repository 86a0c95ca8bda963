"""docs/contributors/benchmarks.md "Adding a benchmark", proved: a family defined here, in test code only (a pass/fail
code-execution suite), registers itself and goes through import → stats → compare → gate →
report with no line of it anywhere else."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import Benchmark, ImportOptions
from omni_tasks.cli import app
from omni_tasks.importers.artifact import Document, ParsedArtifact, nightly_of, require
from omni_tasks.records import ClipAudio, ClipGrade, ClipRecord, Grader, RunSpec
from tests.factories import write_json

runner = CliRunner()


class PassFail(Benchmark):
    """Each task passes or fails; broken = failed; broken down by difficulty."""

    id = "toy_exec"
    family = "pass_fail"
    metric = "pass_rate"
    judged = "incorrect"
    breakdowns = ("level",)
    figures = ("toy_passed", "toy_total")

    def claims(self, doc: dict[str, Any]) -> bool:
        return "toy_items" in doc

    def official_summary(self, clips: Sequence[ClipRecord]) -> dict[str, Any]:
        judged = [c for c in clips if c.incorrect is not None]
        return {"toy_passed": sum(not c.incorrect for c in judged), "toy_total": len(judged)}

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        doc, path = document.doc, document.path
        clips, grades = [], []
        for i, item in enumerate(doc["toy_items"]):
            require(isinstance(item.get("passed"), bool), path, f"toy_items[{i}]: 'passed'")
            clips.append(ClipAudio(item["task"], i, item["task"], "ok"))
            grades.append(
                ClipGrade(
                    item["task"],
                    "graded",
                    hypothesis=str(item["passed"]),
                    incorrect=not item["passed"],
                    breakdown={"level": item["level"]},
                )
            )
        spec = RunSpec(
            benchmark=self.id,
            nightly=nightly_of(doc, path, options.nightly),
            branch=options.branch,
            trigger="import",
            status="complete",
            n_expected=len(clips),
            commit_sha=options.commit,
            summary={k: doc[k] for k in self.figures},
            source=document.source("toy"),
        )
        return ParsedArtifact(spec, clips, grades, Grader("artifact:toy"))


@pytest.fixture
def toy() -> Iterator[Benchmark]:
    bench = benchmarks.register(PassFail())
    yield bench
    benchmarks.unregister(bench.id)


def toy_doc(failing: set[int]) -> dict[str, Any]:
    items = [
        {"task": f"t{i:03d}", "passed": i not in failing, "level": ["easy", "hard"][i % 2]}
        for i in range(200)
    ]
    passed = sum(x["passed"] for x in items)
    return {"date": "20261129-030000", "toy_items": items, "toy_passed": passed, "toy_total": 200}


def test_a_family_defined_in_test_code_runs_import_to_report(
    toy: Benchmark, db, tmp_path: Path
) -> None:
    listed = json.loads(runner.invoke(app, ["benchmarks", "list", "--json"]).stdout)
    assert {"id": "toy_exec", "family": "pass_fail", "metric": "pass_rate"}.items() <= next(
        b for b in listed if b["id"] == "toy_exec"
    ).items()

    base_fail = set(range(0, 200, 10))  # 20 failures, all "easy"
    cand_fail = base_fail | set(range(1, 200, 8))  # 25 more, all on the "hard" level
    keys = []
    for branch, failing in (("main", base_fail), ("rebase", cand_fail)):
        path = write_json(tmp_path / f"{branch}.json", toy_doc(failing))
        out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", branch])
        assert out.exit_code == 0, out.output
        keys.append(out.stdout.strip())
    assert all(k.startswith("toy_exec:") for k in keys)

    stats = json.loads(runner.invoke(app, ["stats", keys[1], "--json"]).stdout)
    assert stats["official"] == {"toy_passed": 155, "toy_total": 200}
    assert stats["accuracy"] == pytest.approx(155 / 200) and stats["mean_wer"] is None
    assert stats["breakdown"]["level"]["hard"] == {"correct": 75, "total": 100, "accuracy": 0.75}
    shown = runner.invoke(app, ["stats", keys[1]])
    assert shown.exit_code == 0 and "level hard" in shown.stdout and "75/100" in shown.stdout

    cmp = json.loads(
        runner.invoke(
            app, ["compare", "--baseline", keys[0], "--candidate", keys[1], "--json"]
        ).stdout
    )
    assert (cmp["regressed"], cmp["improved"], cmp["stable_broken"]) == (25, 0, 20)
    assert cmp["mode_shift"]["level:hard"] == {"baseline": 0, "candidate": 25}

    gate = runner.invoke(app, ["gate", "--benchmark", "toy_exec", "--json"])
    assert gate.exit_code == 0, gate.output
    (decision,) = json.loads(gate.stdout)
    assert decision["verdict"] == "REGRESSED" and decision["regressed"] == 25

    report = tmp_path / "toy.html"
    out = runner.invoke(app, ["report", "--benchmark", "toy_exec", "--out", str(report)])
    assert out.exit_code == 0, out.output
    page = report.read_text(encoding="utf-8")
    assert "REGRESSED" in page and "rebase" in page
    assert "Scores beside the gate" in page and "0.7750" in page  # the candidate's accuracy

    queued = db.execute("SELECT payload FROM omni.alert_outbox ORDER BY message_id").fetchall()
    text = json.dumps([q["payload"] for q in queued], ensure_ascii=False)
    assert "Wrong answers" in text and "Wrong by level" in text and "hard 0→25" in text
