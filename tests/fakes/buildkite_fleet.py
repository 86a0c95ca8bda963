"""The fleet's nightlies as a local Buildkite API serves them, under upstream's real names: the
CUDA pipeline's "Omni · Accuracy Test" job (Qwen3-Omni seed-TTS en 1088 and Daily-Omni 1197
under `qwen3_omni/results/qwen_omni_acc/`), its "MiniCPM-o 4.5 · Accuracy Test" job (the same
runner's `qwen_omni_acc_*` names for MiniCPM-o: seed-TTS zh 2020 over chat without SIM, zh
over realtime sessions (native duplex by its night, after vllm-omni#7413), Daily-Omni, and
`omni_acc_videomme_*` 2700) and its DuplexEval guard
(and a rerun of it under another pin); the AMD pipeline's non-blocking "Qwen3-Omni Accuracy" on
an MI300 queue (seed-TTS and Daily-Omni); the NPU pipeline's MiniCPM-o zh with SIM on
`ascend-a3`; plus JSON artifacts no rule knows. Each job carries its label and agent queue as
the API lists them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.importers.buildkite import BuildkiteSource, ImportReport, import_pipeline
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"


QWEN_DIR = "tests/e2e/accuracy/qwen3_omni/results/qwen_omni_acc"
MINICPM_DIR = "tests/e2e/accuracy/minicpmo_4_5/results"
DUPLEX_DIR = "tests/e2e/accuracy/omni_duplex_eval/results"
TAG = "20261128-021500"
CHAT = {"backend": "openai-chat-omni", "endpoint_type": "openai-chat-omni"}
REALTIME = {"backend": "openai-realtime-tts", "endpoint_type": "/v1/realtime"}


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
        "date": TAG,
        f"{prefix}_accuracy": right / of,
        f"{prefix}_eval_items": items,
    }


def daily_omni_doc(right: int, of: int = 1197) -> dict[str, Any]:
    doc = choice_doc("daily_omni", right, of, task_type="Reasoning")
    for i, item in enumerate(doc["daily_omni_eval_items"]):
        item["video_id"] = f"v{i}"
    return doc


def _wer(i: int) -> float:
    """A clip's WER: most clips clean, some with a word or two wrong, a few runaway."""
    return 0.0 if i % 7 else (0.25 if i % 21 else 1.5)


def en_doc(n: int = 1088, **fields: Any) -> dict[str, Any]:
    """Qwen3-Omni seed-TTS en, per item (non-zero WERs: the summary is their mean)."""
    items = [
        {
            "utterance_id": f"u{i}",
            "locale": "en",
            "wer": _wer(i),
            "reference_raw": f"Sentence number {i}.",
            "asr_raw": f"sentence number {i}",
        }
        for i in range(n)
    ]
    return {
        "model_id": QWEN,
        **CHAT,
        "date": TAG,
        "max_concurrency": 10,
        "seed_tts_content_error_mean": sum(x["wer"] for x in items) / n,
        "seed_tts_content_evaluated": n,
        "seed_tts_wer_eval_items": items,
        **fields,
    }


def zh_doc(sim: bool, n: int = 2020, **fields: Any) -> dict[str, Any]:
    """MiniCPM-o seed-TTS zh; with SIM, upstream main's per-item finish reasons too."""
    items = [
        {
            "utterance_id": f"z{i}",
            "locale": "zh",
            "wer": _wer(i) / 100,
            "reference_raw": "你好世界",
            "asr_raw": "你好世界",
            **({"sim": 0.7, "finish_reason": "stop"} if sim else {}),
        }
        for i in range(n)
    ]
    return {
        "model_id": MINICPM,
        **CHAT,
        "date": TAG,
        "seed_tts_content_error_mean": sum(x["wer"] for x in items) / n,
        "seed_tts_content_evaluated": n,
        "seed_tts_wer_eval_items": items,
        **fields,
    }


def videomme_doc(right: int, of: int = 2700) -> dict[str, Any]:
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
        item.update(question_id=f"{i:04d}-1", duration="short" if i % 2 else "medium")
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
# The job that uploads each folder upstream, and the agent queue it runs on
# (.buildkite/cuda/test-nightly.yml, amd/test-amd-nightly.yml, npu/test-npu-nightly.yml;
# common/ci_mirror_hardwares.yml for the queues).
STEPS = {
    ("vllm-omni", QWEN_DIR): (":full_moon: Omni · Accuracy Test", "mithril-h100-pool"),
    ("vllm-omni", MINICPM_DIR): (
        ":full_moon: Omni · MiniCPM-o 4.5 · Accuracy Test",
        "mithril-h100-pool",
    ),
    ("vllm-omni", DUPLEX_DIR): (":full_moon: Omni · Omni-DuplexEval CI Guard", "mithril-h100-pool"),
    ("vllm-omni-amd", QWEN_DIR): ("Qwen3-Omni Accuracy", "amd_mi300_2"),
    ("vllm-omni-npu-ci", MINICPM_DIR): ("Omni · MiniCPM-o 4.5 · Accuracy Test", "ascend-a3"),
}
OTHER_STEP = (":full_moon: Omni · Perf Test · Async Chunk", "mithril-h100-pool")


def step_of(pipeline: str, path: str) -> tuple[str, str]:
    """The (label, queue) of the job that uploads `path` in `pipeline`."""
    folder = path.rsplit("/", 1)[0]
    return STEPS.get((pipeline, folder), OTHER_STEP)


def add(
    state: BuildkiteState,
    url: str,
    pipeline: str,
    number: int,
    files: dict[str, dict[str, Any]],
    created_at: str = "2026-11-28T01:00:00.000Z",
    queue: str | None = None,
) -> None:
    """Build `number` of `pipeline` (newest first, as the API lists them): one job per
    upstream step that uploads one of `files` (artifact path → JSON document), each with its
    label, command and agent queue (`queue` overrides it), and the files as its artifacts."""
    jobs: dict[str, dict[str, Any]] = {}
    for path in files:
        label, default_queue = step_of(pipeline, path)
        jobs.setdefault(
            label,
            {
                "id": f"job-{len(jobs) + 1}",
                "type": "script",
                "name": label,
                "command": COMMANDS.get(pipeline, "pytest -sv tests/e2e/accuracy"),
                "agent_query_rules": [f"queue={queue or default_queue}"],
                "agent": {"name": f"{pipeline}-agent-3"},
            },
        )
    build = {
        "number": number,
        "branch": "main",
        "commit": f"{number:040x}",
        "state": "passed",
        "created_at": created_at,
        "web_url": f"https://buildkite.com/vllm/{pipeline}/builds/{number}",
        "jobs": list(jobs.values()),
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
                "job_id": jobs[step_of(pipeline, path)[0]]["id"],
                "download_url": f"{url}/v2/organizations/vllm/pipelines/{pipeline}/builds/{number}"
                f"/artifacts/{aid}/download",
            }
        )
    state.pipeline_artifacts[(pipeline, number)] = arts


def retry_job(state: BuildkiteState, pipeline: str, number: int, path: str, doc: Any) -> None:
    """The job that uploaded `path` in build `number` was retried: the first attempt is marked
    superseded, and the new attempt uploads the same files again, `doc` under `path`."""
    build = next(b for b in state.pipelines[pipeline] if b["number"] == number)
    arts = state.pipeline_artifacts[(pipeline, number)]
    first = next(a for a in arts if a["path"] == path)
    old = next(j for j in build["jobs"] if j["id"] == first["job_id"])
    new_id = f"{old['id']}-retry"
    old.update(retried=True, retried_in_job_id=new_id)
    build["jobs"].append({**old, "id": new_id, "retried": False, "retried_in_job_id": None})
    for art in [a for a in arts if a["job_id"] == old["id"]]:
        aid = f"{art['id']}-retry"
        state.blobs[aid] = json.dumps(doc).encode() if art is first else state.blobs[art["id"]]
        arts.append(
            {
                **art,
                "id": aid,
                "job_id": new_id,
                "download_url": art["download_url"].replace(f"/{art['id']}/", f"/{aid}/"),
            }
        )


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
                f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{TAG}.json": en_doc(),
                f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{TAG}.json": {
                    **daily_omni_doc(718),
                    "model_id": QWEN,
                },
                f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{TAG}.json": zh_doc(sim=False),
                f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_20261128-031500.json": zh_doc(
                    sim=False, n=200, **REALTIME
                ),
                f"{MINICPM_DIR}/qwen_omni_acc_daily_omni_{TAG}.json": {
                    **daily_omni_doc(958),
                    "model_id": "/data/models/MiniCPM-o-4_5",  # the test's local copy
                },
                f"{MINICPM_DIR}/omni_acc_videomme_{TAG}.json": videomme_doc(1890),
                f"{DUPLEX_DIR}/summary.json": duplex_doc(),
                "tests/dfx/perf/results/latency_summary.json": {"p50": 1.0},
                "tests/dfx/perf/results/\x1b[2Jcleared.json": {"p50": 1.0},  # names are data
            },
        )
        # MiniCPM-o's job was retried: its first attempt's Daily-Omni is kept as a retry.
        retry_job(
            state,
            "vllm-omni",
            11,
            f"{MINICPM_DIR}/qwen_omni_acc_daily_omni_{TAG}.json",
            {**daily_omni_doc(946), "model_id": MINICPM},
        )
        add(
            state,
            url,
            "vllm-omni-amd",
            5,
            {
                f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{TAG}.json": en_doc(),
                f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{TAG}.json": daily_omni_doc(700),
            },
        )
        add(
            state,
            url,
            "vllm-omni-npu-ci",
            7,
            {f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{TAG}.json": zh_doc(sim=True)},
        )
        # A rerun of the night judged under another pin, 3 samples short: imported, not valid.
        add(
            state,
            url,
            "vllm-omni",
            12,
            {f"{DUPLEX_DIR}/summary.json": duplex_doc("0" * 40, 63)},
        )
        yield url


def sync(db, url: str, pipeline: str) -> ImportReport:
    return import_pipeline(
        db,
        BuildkiteSource(
            "vllm", pipeline, "bk-token", f"{url}/v2", backoff_s=0.01, artifact_hosts=STORAGE_HOSTS
        ),
    )
