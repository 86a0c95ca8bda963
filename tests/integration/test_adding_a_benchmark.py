"""docs/contributors/benchmarks.md "Adding a benchmark", proved: families defined here, in test
code only, register themselves and work with no line of them anywhere else: a pass/fail
code-execution suite that arrives as artifacts (import → stats → compare → gate → report), and
a short-answer QA suite that runs here (bench on the simulator → gate → report → Slack message
→ bisect → A/B)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks
from omni_tasks.benchmarks.artifact import Document, ParsedArtifact, nightly_of, require
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, Words
from omni_tasks.cli import app
from omni_tasks.records import ClipAudio, ClipGrade, ClipRecord, Grader, RunSpec
from tests.airflow_env import REPO
from tests.factories import write_json
from tests.fakes.toy_qa import TOY_QA, write_dataset

runner = CliRunner()


class PassFail(Benchmark):
    """Each task passes or fails; broken = failed; broken down by difficulty."""

    id = "toy_exec"
    family = "pass_fail"
    metric = "pass_rate"
    judged = "incorrect"
    words = Words("task", "tasks", "result", "", "failed tasks", "no result")
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
    benchmarks._REGISTRY.pop(bench.id)


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
    assert "Failed tasks" in text and "Wrong by level" in text and "hard 0→25" in text


# ---------------------------------------------------------------- a runnable family
# A short-answer QA set, defined outside the product in one module (tests/fakes/toy_qa.py): its
# items, its request, its judge and how the simulator answers it; registered by one line.


@pytest.fixture
def toy_qa(tmp_path: Path) -> Iterator[Path]:
    bench = benchmarks.register(TOY_QA)
    root = write_dataset(tmp_path / "omni-home" / "toy_qa")  # under OMNI_HOME: a trusted root
    yield root
    benchmarks._REGISTRY.pop(bench.id)


def test_a_runnable_family_defined_in_test_code_runs_gates_and_is_bisected(
    toy_qa: Path, db, tmp_path: Path
) -> None:
    """bench (the shared item runner, the simulator answering by the family's rule) → gate
    → report → Slack message → `omni-tasks bisect` names the planted culprit → `omni-tasks ab`
    finds the regression."""
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
    page = report.read_text(encoding="utf-8")
    assert out.exit_code == 0 and "REGRESSED" in page
    _speaks_as_a_text_family(page, runner.invoke(app, ["stats", keys["rebase"]]).stdout)
    queued = db.execute("SELECT payload FROM omni.alert_outbox").fetchall()
    said = json.dumps([q["payload"] for q in queued], ensure_ascii=False)
    assert "toy_qa" in said and "*Worst regressed questions*" in said
    assert " answered " in said and "Wrong answers" in said
    assert not {"clip", "heard", "WER"} & set(re.findall(r"[A-Za-z]+", said))

    history = [f"{i:02d}" + "f" * 38 for i in range(6)]
    out = runner.invoke(
        app,
        ["bisect", *history, "--benchmark", "toy_qa", "--target", "simulator:commit-history",
         "--first-bad", history[3], "--dataset", str(toy_qa), "--nightly", "2026-11-30",
         "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["first_bad"] == history[3]

    # The on-demand A/B (no GitHub repo: the verdict and its Slack message only).
    out = runner.invoke(
        app,
        ["ab", "--benchmark", "toy_qa", "--dataset", str(toy_qa), "--base-target",
         "simulator:main", "--head-target", "simulator:rebase", "--base-sha", "b" * 40,
         "--head-sha", "c" * 40, "--pr", "9", "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["verdict"] == "REGRESSED"
    (posted,) = db.execute(
        "SELECT payload FROM omni.alert_outbox WHERE idempotency_key LIKE 'ab|%'"
    ).fetchall()
    head = posted["payload"]["blocks"][0]["text"]["text"]
    assert "A/B toy_qa · Qwen3-Omni-30B-A3B-Instruct · lane default · " in head
    body = blocks.render_text(posted["payload"])
    assert "120 questions paired; 240 of a budget of 6000 asked" in body  # the suite's 120
    rows = db.execute("SELECT DISTINCT benchmark FROM omni.run WHERE trigger = 'ab'").fetchall()
    assert [r["benchmark"] for r in rows] == ["toy_qa"]


def _speaks_as_a_text_family(page: str, stats: str) -> None:
    """A text family's report and `stats` in its own words: questions answered, wrong answers;
    never seed-TTS's clips heard, WER, grades or audio."""
    assert "Regressed questions (" in page and "<th>candidate answered</th>" in page
    for seed_tts in ("Regressed clips", "heard (WER)", "no grade", "no audio", "audio</th>"):
        assert seed_tts not in page
    flat = " ".join(stats.split())
    assert "questions scored / failed / infra" in flat and "wrong answers [95 % Wilson]" in flat
    assert re.search(r"\(\d+ questions\)", flat) and "clips" not in flat


def install_family(site: Path) -> dict[str, str]:
    """What `pip install` of the family's own package leaves on the path: the package, which
    imports the product's base class first as any family module does and declares a run option
    of its own, and its dist-info with one entry point (`omni_tasks.benchmarks`). The
    environment a process needs to see it."""
    package = site / "toy_family_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from types import MappingProxyType\n\n"
        "from omni_tasks.benchmarks.base import Benchmark, RunOption\n"
        "from tests.fakes.toy_qa import ShortAnswer\n\n\n"
        "class Hinted(ShortAnswer):\n"
        "    options = MappingProxyType(\n"
        "        {'toy_hint': RunOption('', {'type': 'string'}, 'Hint', 'Said before each question')}\n"
        "    )\n\n\n"
        "TOY: Benchmark = Hinted()\n"
    )
    dist = site / "toy_family_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-family-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[omni_tasks.benchmarks]\ntoy_qa = toy_family_pkg:TOY\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OMNI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    return env


def test_an_installed_family_package_imports_cleanly_and_is_then_registered(tmp_path) -> None:
    """A fresh interpreter imports the family's package first: its `omni_tasks.benchmarks.base`
    import must not load the entry points (that would import the half-imported package); the
    first lookup does (here a series' config giving the family's own run option, before any
    `get`), and finds it with the capabilities a suite brings."""
    env = install_family(tmp_path / "site")
    out = subprocess.run(
        [sys.executable, "-c", "import toy_family_pkg"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (out.returncode, out.stderr) == (0, "")
    probe = (
        "import toy_family_pkg\n"
        "from omni_tasks.deployment.schema import NightlyParams\n"
        "print(NightlyParams(benchmark='toy_qa', toy_hint='Think.').options)\n"
        "from omni_tasks import benchmarks\n"
        "found = benchmarks.get('toy_qa')\n"
        "assert found is toy_family_pkg.TOY, found\n"
        "print(found.family, *sorted(found.capabilities))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == [
        "{'toy_hint': 'Think.'}",
        "short_answer ab bisect concurrency",
    ]


def test_an_installed_family_runs_through_the_version_2_nightly(db, results_dsn, tmp_path) -> None:
    """The same family from a package of its own: one entry point (`omni_tasks.benchmarks`),
    no line in the product. `omni-tasks nightly` on a version 2 config runs its series under
    Airflow (`airflow dags test`, other processes) and decides it against its own baseline."""
    env = install_family(tmp_path / "site")
    home = tmp_path / "home"
    root = write_dataset(home / "toy_qa", n=60)
    config = tmp_path / "fleet.yaml"
    config.write_text(
        "version: 2\nlanes: {default: {queue: gpu, pool: gpu}}\nseries:\n"
        "  - {benchmark: toy_qa, lane: default, branches: [main, rebase], baseline: main,\n"
        "     targets: {main: 'simulator:main', rebase: 'simulator:rebase'},\n"
        f"     dataset: '{root}', seeds: [42]}}\n"
    )
    env.update(OMNI_DATABASE_URL=results_dsn, OMNI_HOME=str(home))
    out = subprocess.run(
        [str(REPO / ".venv/bin/omni-tasks"), "nightly", "--config", str(config),
         "--nightly", "2026-11-29"],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    runs = db.execute(
        "SELECT branch, status FROM omni.run WHERE benchmark = 'toy_qa' ORDER BY branch"
    ).fetchall()
    assert [(r["branch"], r["status"]) for r in runs] == [
        ("main", "complete"),
        ("rebase", "complete"),
    ]
    (decision,) = db.execute(
        "SELECT verdict, candidate_branch FROM omni.gate_decision WHERE benchmark = 'toy_qa'"
    ).fetchall()
    assert (decision["candidate_branch"], decision["verdict"]) == ("rebase", "REGRESSED")
