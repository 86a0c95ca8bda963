"""docs/contributors/benchmarks.md "Adding a benchmark", proved: families defined here, in test
code only, register themselves and work with no line of them anywhere else: a pass/fail
code-execution suite that arrives as artifacts (import → stats → compare → gate → report), and
a short-answer QA suite that runs here (bench on the simulator → gate → report → Slack message
→ bisect)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import Benchmark, ImportOptions
from omni_tasks.benchmarks.request import RunRequest
from omni_tasks.benchmarks.suite import ItemSet, ItemSuite
from omni_tasks.cli import app
from omni_tasks.importers.artifact import Document, ParsedArtifact, nightly_of, require
from omni_tasks.records import ClipAudio, ClipGrade, ClipRecord, Grader, RunSpec
from omni_tasks.synthesis.profiles import Profile, uniform
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


# ---------------------------------------------------------------- a runnable family
# A short-answer QA set, defined here only: its items, its request, its judge and how the
# simulator answers it. One class (and one registry line: `benchmarks.register`).


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    answer: str


class ShortAnswerSuite(ItemSuite):
    grader = Grader("answer:toy-qa-exact", {"backend": "answer", "rule": "exact word"})
    system_text = ""
    user_format = "Q: {question} Answer with one word."

    def load(self, dataset: str) -> ItemSet:
        path = Path(dataset) / "qa.tsv"
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            key, text, answer = line.split("\t")
            rows.append(Question(key, text, answer))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return ItemSet(tuple(rows), digest)

    def reference(self, item: Question) -> str:
        return item.answer

    def request_body(self, item: Question, req: RunRequest) -> dict[str, Any]:
        prompt = self.user_format.format(question=item.text)
        return {
            "model": req.model,
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
            "modalities": ["text"],
            "temperature": 0.0,
        }

    def judge(self, item: Question, text: str) -> ClipGrade:
        wrong = text.strip().lower() != item.answer.lower()
        return ClipGrade(item.key, "graded", hypothesis=text, incorrect=wrong)

    def simulate(self, body: dict[str, Any], profile: Profile, seed: int) -> str | None:
        content = body["messages"][-1]["content"]
        prompt = content[0].get("text", "") if isinstance(content, list) else ""
        if not prompt.startswith("Q: "):
            return None
        # The demo questions name their answer last ("… Paris"); a weaker model misses some.
        question = prompt.removeprefix("Q: ").removesuffix(" Answer with one word.")
        if uniform(seed, question, "wrong_answer") < profile.wrong_answer:
            return "unknown"
        return question.rsplit(" ", 1)[-1]


class ShortAnswer(Benchmark):
    id = "toy_qa"
    family = "short_answer"
    metric = "accuracy"
    judged = "incorrect"
    runnable = True
    suite = ShortAnswerSuite()
    capabilities = frozenset({"ab", "bisect"})
    figures = ("toy_qa_accuracy",)

    def claims(self, doc: dict[str, Any]) -> bool:
        return False

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        raise NotImplementedError

    def official_summary(self, clips: Sequence[ClipRecord]) -> dict[str, Any]:
        judged = [c for c in clips if c.incorrect is not None]
        return {"toy_qa_accuracy": sum(not c.incorrect for c in judged) / max(len(judged), 1)}


@pytest.fixture
def toy_qa(tmp_path: Path) -> Iterator[Path]:
    bench = benchmarks.register(ShortAnswer())
    root = tmp_path / "omni-home" / "toy_qa"  # under OMNI_HOME: a trusted root of the forms
    root.mkdir(parents=True)
    rows = [f"q{i:03d}\tWhich word ends question {i}? It is word{i}\tword{i}" for i in range(120)]
    (root / "qa.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    yield root
    benchmarks.unregister(bench.id)


def test_a_runnable_family_defined_in_test_code_runs_gates_and_is_bisected(
    toy_qa: Path, db, tmp_path: Path
) -> None:
    """bench (the shared item runner, the simulator answering by the family's rule) → gate
    → report → Slack message → `omni-tasks bisect` names the planted culprit."""
    keys = {}
    for profile, branch in (("simulator:main", "main"), ("simulator:rebase", "rebase")):
        out = runner.invoke(
            app,
            ["bench", "--benchmark", "toy_qa", "--target", profile, "--branch", branch,
             "--dataset", str(toy_qa), "--nightly", "2026-11-29", "--commit", f"{branch}1"],
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        keys[branch] = out.stdout.strip().splitlines()[-1]
    stats = json.loads(runner.invoke(app, ["stats", keys["rebase"], "--json"]).stdout)
    assert stats["accuracy"] < 0.8 and stats["official"]["toy_qa_accuracy"] == stats["accuracy"]

    gate = runner.invoke(
        app, ["gate", "--benchmark", "toy_qa", "--nightly", "2026-11-29", "--json"]
    )
    assert gate.exit_code == 0, gate.output
    (decision,) = json.loads(gate.stdout)
    assert decision["verdict"] == "REGRESSED"
    report = tmp_path / "toy_qa.html"
    out = runner.invoke(
        app, ["report", "--benchmark", "toy_qa", "--nightly", "2026-11-29", "--out", str(report)]
    )
    assert out.exit_code == 0 and "REGRESSED" in report.read_text(encoding="utf-8")
    queued = db.execute("SELECT payload FROM omni.alert_outbox").fetchall()
    assert "toy_qa" in json.dumps([q["payload"] for q in queued])

    history = [f"{i:02d}" + "f" * 38 for i in range(6)]
    out = runner.invoke(
        app,
        ["bisect", *history, "--benchmark", "toy_qa", "--target", "simulator:commit-history",
         "--first-bad", history[3], "--dataset", str(toy_qa), "--nightly", "2026-11-30",
         "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["first_bad"] == history[3]
