"""A short-answer QA family defined outside the product: its items, its request, its judge and
how the simulator answers it, in one module. `tests/integration/test_adding_a_benchmark.py`
registers it in-process (`benchmarks.register`) and, for the Airflow nightly, as an installed
package would (an `omni_tasks.benchmarks` entry point naming `TOY_QA`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omni_tasks.benchmarks.artifact import Document, ParsedArtifact
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, Words
from omni_tasks.benchmarks.request import RunRequest
from omni_tasks.benchmarks.suite import ItemSet, ItemSuite
from omni_tasks.records import ClipGrade, ClipRecord, Grader
from omni_tasks.synthesis.profiles import Profile, uniform


def write_dataset(root: Path, n: int = 120) -> Path:
    """The family's demo data: one question a line, its answer the question's last word."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [f"q{i:03d}\tWhich word ends question {i}? It is word{i}\tword{i}" for i in range(n)]
    (root / "qa.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


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
    words = Words("question", "questions", "answered", "", "wrong answers", "no answer")
    suite = ShortAnswerSuite()
    figures = ("toy_qa_accuracy",)

    def claims(self, doc: dict[str, Any]) -> bool:
        return False

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        raise NotImplementedError

    def official_summary(self, clips: Sequence[ClipRecord]) -> dict[str, Any]:
        judged = [c for c in clips if c.incorrect is not None]
        return {"toy_qa_accuracy": sum(not c.incorrect for c in judged) / max(len(judged), 1)}


TOY_QA = ShortAnswer()
