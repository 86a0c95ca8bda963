"""Omni-DuplexEval (MiniCPM-o duplex, judged by a VLM): a summary-only family. Upstream's CI
guard (`tests/e2e/accuracy/omni_duplex_eval/`) writes `results/summary.json`, the output of
`summarize_scores`: a protocol pin, a sample count and judge means (RTD content and temporal
scores, PR success), with per-task means. There are no per-item rows in the artifact, so a
night is a set of figures with its protocol pin: trended and shown, never paired-gated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from omni_tasks.benchmarks.artifact import (
    Document,
    ParsedArtifact,
    artifact_judge,
    bounded_number,
    finite_number,
    imported_spec,
    nightly_of,
    require,
)
from omni_tasks.benchmarks.base import Benchmark, ImportOptions
from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipRecord
from omni_tasks.trust.names import printable

# OpenBMB/Omni-DuplexEval's evaluator commit that upstream's prompts are copied from
# (`omni_duplex_eval_metrics.PROTOCOL_PIN`, vllm-omni 0.30.0 and 0.32.0rc1): a night judged
# under another pin is not on this series' scale.
PROTOCOL_PIN = "ca3c122b4d4bf67afd6b18ea5e724b4561bdde48"

# Each figure's key in the summary and its scale (what upstream's comments say of it).
SCALES = {
    "rtd.mean_content_score": (0.0, 3.0),
    "rtd.mean_avg_temporal_score": (0.0, 3.0),
    "pr.mean_all_success": (0.0, 1.0),
}
MAX_TASKS = 40
TASK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,60}$")

JUDGE = artifact_judge(
    "duplex-eval/judge",
    "vLLM-Omni Omni-DuplexEval CI guard (summarize_scores)",
    note="judge means as the artifact reports them; no per-item rows",
)


class DuplexEval(Benchmark):
    id = "duplex_eval"
    family = "duplex_eval"
    metric = "judge_score"
    judged = "incorrect"  # no item is judged here: a summary-only series is never gated
    description = "Omni-DuplexEval: duplex video dialogue, judge means (summary-only)"
    protocol_pin = PROTOCOL_PIN
    summary_only_family = True

    def claims(self, doc: JsonObject) -> bool:
        return "protocol_pin" in doc and "samples" in doc and ("rtd" in doc or "pr" in doc)

    @property
    def figures(self) -> tuple[str, ...]:
        return ("duplex_samples", *SCALES)

    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
        """No items to recompute from: the artifact's figures are the summary."""
        return {}

    def guard_failures(self, summary: JsonObject, expected_items: int | None) -> list[str]:
        """The CI guard asserts the pin, then the sample count, before its thresholds."""
        pin, samples = summary.get("protocol_pin"), summary.get("duplex_samples")
        if pin != self.protocol_pin:
            return [f"protocol_pin changed: {pin} != {self.protocol_pin}"]
        if expected_items is not None and samples != expected_items:
            return [f"expected {expected_items} samples, got {samples}"]
        return []

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        path, doc = document.path, document.doc
        require(self.claims(doc), path, "not an Omni-DuplexEval summary (protocol_pin, rtd/pr)")
        pin = doc["protocol_pin"]
        require(
            isinstance(pin, str) and re.fullmatch(r"[0-9a-f]{7,40}", pin) is not None,
            path,
            "'protocol_pin' must be a commit hash",
        )
        samples = doc["samples"]
        require(
            finite_number(samples) and isinstance(samples, int) and samples >= 0,
            path,
            "'samples' must be a count",
        )
        summary: dict[str, Any] = {"protocol_pin": pin, "duplex_samples": samples}
        for part in ("rtd", "pr"):
            block = doc.get(part)
            if block is None:
                continue
            require(isinstance(block, dict), path, f"{part!r} must be an object")
            for key, (low, high) in SCALES.items():
                head, _, name = key.partition(".")
                if head == part and name in block:
                    summary[key] = bounded_number(block[name], low, high, path, repr(key))
            summary.update(_by_task(part, block.get("by_task"), path))
        warnings = []
        if pin != self.protocol_pin:
            warnings.append(
                f"{path}: protocol_pin {pin[:12]} is not the series' {PROTOCOL_PIN[:12]}: "
                "judged by another evaluator version, not comparable with its history"
            )
        spec = imported_spec(
            path,
            self.id,
            options.branch,
            nightly=nightly_of(doc, path, options.nightly, options.built),
            status="summary_only",
            n_expected=samples,
            commit_sha=options.commit,
            summary=summary,
            source={**document.source("omni-duplex-eval"), "protocol_pin": pin},
        )
        return ParsedArtifact(spec, [], [], JUDGE, warnings)


def _by_task(part: str, by_task: Any, path: Any) -> dict[str, float]:
    """Per-task means: RTD's are objects of the two scores, PR's a success rate."""
    if by_task is None:
        return {}
    require(
        isinstance(by_task, dict) and len(by_task) <= MAX_TASKS,
        path,
        f"'{part}.by_task' must be an object of at most {MAX_TASKS} tasks",
    )
    out = {}
    for task, value in by_task.items():
        require(
            TASK_NAME.fullmatch(task) is not None,
            path,
            f"'{part}.by_task': task name {printable(task[:60])!r} is not a plain name",
        )
        if part == "pr":
            key = f"pr.by_task.{task}"
            out[key] = bounded_number(value, 0.0, 1.0, path, repr(key))
            continue
        require(isinstance(value, dict), path, f"'rtd.by_task.{task}' must be an object")
        for name in ("mean_content_score", "mean_avg_temporal_score"):
            if name in value:
                key = f"rtd.by_task.{task}.{name}"
                out[key] = bounded_number(value[name], 0.0, 3.0, path, repr(key))
    return out


DUPLEX_EVAL = DuplexEval()
