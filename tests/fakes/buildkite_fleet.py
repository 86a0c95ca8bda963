"""The fleet's nightlies as a local Buildkite API serves them: the CUDA pipeline's Qwen3-Omni
seed-TTS and Daily-Omni, MiniCPM-o seed-TTS zh without SIM and a DuplexEval summary (and a
rerun of it under another pin), the AMD pipeline's seed-TTS, the NPU pipeline's MiniCPM-o zh
with SIM; plus two JSON artifacts no rule knows."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.importers.buildkite import BuildkiteSource, ImportReport, import_pipeline
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import small_artifact
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"


def choice_doc(prefix: str, right: int, of: int, **fields: str) -> dict[str, Any]:
    """A multiple-choice results file: `right` of `of` items answered correctly, each item
    carrying `fields` (its key fields and breakdown labels)."""
    items = [
        {
            "request_id": str(i),
            **fields,
            "gold": "A",
            "predicted": "A" if i < right else "B",
            "correct": i < right,
        }
        for i in range(of)
    ]
    return {
        "date": "20261128-021500",
        f"{prefix}_accuracy": right / of,
        f"{prefix}_eval_items": items,
    }


def daily_omni_doc(right: int, of: int) -> dict[str, Any]:
    doc = choice_doc("daily_omni", right, of, task_type="Reasoning")
    for i, item in enumerate(doc["daily_omni_eval_items"]):
        item["video_id"] = f"v{i}"
    return doc


def zh_doc(sim: bool) -> dict[str, Any]:
    """MiniCPM-o seed-TTS zh; with SIM, upstream main's per-item finish reasons too."""
    items = [
        {
            "utterance_id": f"z{i}",
            "locale": "zh",
            "wer": 0.0,
            "reference_raw": "你好世界",
            "asr_raw": "你好世界",
            **({"sim": 0.7, "finish_reason": "stop"} if sim else {}),
        }
        for i in range(4)
    ]
    return {
        "date": "20261128-021500",
        "seed_tts_content_error_mean": 0.0,
        "seed_tts_content_evaluated": 4,
        "seed_tts_wer_eval_items": items,
    }


def videomme_doc(right: int, of: int) -> dict[str, Any]:
    """MiniCPM-o's Video-MME results, with upstream's per-duration breakdown."""
    doc = choice_doc(
        "videomme",
        right,
        of,
        domain="Knowledge",
        sub_category="Humanity & History",
        task_type="Counting Problem",
    )
    for i, item in enumerate(doc["videomme_eval_items"]):
        item.update(question_id=f"{i:03d}-1", duration="short" if i % 2 else "medium")
    doc["videomme_accuracy_per_duration"] = {"short": 0.7, "medium": 0.7}
    return doc


def duplex_doc(pin: str = PROTOCOL_PIN, samples: int = 66) -> dict[str, Any]:
    """`results/summary.json` as upstream's `summarize_scores` writes it (no `date`)."""
    return {
        "protocol_pin": pin,
        "samples": samples,
        "rtd": {
            "mean_content_score": 1.2,
            "mean_avg_temporal_score": 2.4,
            "by_task": {"RTD_OCR": {"mean_content_score": 1.0, "mean_avg_temporal_score": 2.0}},
        },
        "pr": {"samples": 36, "mean_all_success": 0.25, "by_task": {"correction": 0.3}},
    }


# The accuracy steps' command lines: 0.30's switch names on CUDA (SIM not switched on, as the
# CUDA step has it), upstream main's on the NPU lane.
COMMANDS = {
    "vllm-omni": "SEED_TTS_WER_EVAL=1 SEED_TTS_WER_SAVE_ITEMS=1 pytest -sv tests/e2e/accuracy",
    "vllm-omni-npu-ci": "export WER_EVAL=1 SAVE_EVAL_ITEMS=1 SEED_TTS_SIM_EVAL=1 && pytest -sv",
}


def add(
    state: BuildkiteState,
    url: str,
    pipeline: str,
    number: int,
    files: dict[str, dict[str, Any]],
    created_at: str = "2026-11-28T01:00:00.000Z",
) -> None:
    """Build `number` of `pipeline` (newest first, as the API lists them), its one accuracy
    job and `files` (artifact path → JSON document) as that job's artifacts."""
    build = {
        "number": number,
        "branch": "main",
        "commit": f"{number:040x}",
        "state": "passed",
        "created_at": created_at,
        "web_url": f"https://buildkite.com/vllm/{pipeline}/builds/{number}",
        "jobs": [
            {
                "id": "job-1",
                "step_key": "accuracy",
                "name": "Accuracy nightly",
                "command": COMMANDS.get(pipeline, "pytest -sv tests/e2e/accuracy"),
                "agent": {"name": f"{pipeline}-agent-3"},
            }
        ],
    }
    state.pipelines.setdefault(pipeline, []).insert(0, build)
    arts = []
    for i, (path, doc) in enumerate(files.items()):
        aid = f"{pipeline}-{number}-{i}"
        state.blobs[aid] = json.dumps(doc).encode()
        arts.append(
            {
                "id": aid,
                "path": path,
                "filename": path.rsplit("/", 1)[-1],
                "job_id": "job-1",
                "download_url": f"{url}/v2/organizations/vllm/pipelines/{pipeline}/builds/{number}"
                f"/artifacts/{aid}/download",
            }
        )
    state.pipeline_artifacts[(pipeline, number)] = arts


@contextlib.contextmanager
def fleet_api() -> Iterator[str]:
    """The three pipelines' builds on a local Buildkite API; yields its base URL."""
    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        add(
            state,
            url,
            "vllm-omni",
            11,
            {
                "results/qwen_omni_acc_seed_tts_20261128-021500.json": small_artifact(n=4),
                "results/qwen_omni_acc_daily_omni_20261128-021500.json": daily_omni_doc(6, 10),
                "tests/e2e/accuracy/minicpmo_4_5/results/seed_tts_zh.json": zh_doc(sim=False),
                "tests/e2e/accuracy/omni_duplex_eval/results/summary.json": duplex_doc(),
                "perf/latency_summary.json": {"p50": 1.0},
                "perf/\x1b[2Jcleared.json": {"p50": 1.0},  # Buildkite's names are data
            },
        )
        add(
            state,
            url,
            "vllm-omni-amd",
            5,
            {
                "results/qwen_omni_acc_seed_tts_20261128-021500.json": small_artifact(n=4),
            },
        )
        add(
            state,
            url,
            "vllm-omni-npu-ci",
            7,
            {
                "tests/e2e/accuracy/minicpmo_4_5/results/seed_tts_zh.json": zh_doc(sim=True),
                "tests/e2e/accuracy/minicpmo_4_5/results/videomme.json": videomme_doc(14, 20),
            },
        )
        # A rerun of the night judged under another pin, 3 samples short: imported, not valid.
        add(
            state,
            url,
            "vllm-omni",
            12,
            {"tests/e2e/accuracy/omni_duplex_eval/results/summary.json": duplex_doc("0" * 40, 63)},
        )
        yield url


def sync(db, url: str, pipeline: str) -> ImportReport:
    return import_pipeline(
        db,
        BuildkiteSource(
            "vllm", pipeline, "bk-token", f"{url}/v2", backoff_s=0.01, artifact_hosts=STORAGE_HOSTS
        ),
    )
