"""(d) Upstream's seed-TTS result writer (`compute_seed_tts_wer_metrics`, only its ASR call
scripted) writes artifacts — nightly-style summary only, with `--seed-tts-wer-save-items`,
and with `--save-detailed` — that our importer takes in, and whose every summary figure
`stats` reproduces exactly from the stored clip rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from tests.conformance.upstream import Upstream

EVAL = "vllm_omni.benchmarks.data_modules.seed_tts_eval"
runner = CliRunner()

# (reference, what happened): a transcript, or a failure the writer must classify.
CASES: list[tuple[str, Any]] = [
    ("Appearances are deceptive.", "appearances are deceptive"),
    ("Don't take any chances.", "get decisive speech in the same style don't take any chances"),
    (
        "I feel sick, what should I do?",
        "I'm sorry to hear that. Rest, drink water, and call a doctor.",
    ),
    ("Turn left at the second light.", "turn right at the second light"),
    ("Bring an umbrella today.", ""),  # silence heard: empty_asr
    ("The river is quiet tonight.", RuntimeError("CUDA error")),  # asr_exception
    ("Seven yellow bottles.", "request_failed"),
    ("Paper and pencils, please.", "no_pcm"),
    ("Orange market morning.", "orange market morning"),
]


def upstream_artifact(u: Upstream, per_item: bool, detailed: bool) -> dict[str, Any]:
    fn = u.load(EVAL, ["compute_seed_tts_wer_metrics"])["compute_seed_tts_wer_metrics"]
    space = u._space(EVAL)
    request_cls = u.load(
        "vllm_omni.benchmarks.data_modules.seed_tts_dataset", ["SeedTTSSampleRequest"]
    )["SeedTTSSampleRequest"]
    output_cls = u.load("vllm_omni.benchmarks.patch.patch", ["MixRequestFuncOutput"])[
        "MixRequestFuncOutput"
    ]
    tone = (3000 * np.sin(np.arange(24_000) / 5)).astype(np.int16).tobytes()
    requests, outputs = [], []
    heard: Iterator[Any] = iter(h for _, h in CASES if h not in ("request_failed", "no_pcm"))
    for i, (ref, what) in enumerate(CASES):
        requests.append(
            request_cls(
                prompt=ref, prompt_len=1, seed_tts_utterance_id=f"u{i}", seed_tts_locale="en"
            )
        )
        out = output_cls()
        out.success = what != "request_failed"
        out.error = "Server disconnected" if what == "request_failed" else ""
        out.generated_text = ref
        out.tts_output_pcm_bytes = None if what == "no_pcm" else tone
        outputs.append(out)

    def scripted_asr(wav: np.ndarray) -> str:  # the one scripted call: Whisper's transcript
        h = next(heard)
        if isinstance(h, Exception):
            raise h
        return str(h)

    space["_ensure_en_asr"] = lambda: None
    space["_transcribe_en_f32_16k"] = scripted_asr
    metrics = fn(requests, outputs, include_per_item=per_item)
    doc = {
        "date": "20261129-021500",
        "model_id": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "max_concurrency": 10,
        **metrics,
    }
    if detailed:  # vLLM's serve.py keeps these only with --save-detailed
        doc["generated_texts"] = [o.generated_text for o in outputs]
    return doc


@pytest.mark.parametrize("detailed", [False, True])
def test_d_items_artifacts_import_and_stats_reproduce_the_summary(
    upstream: Upstream, db, tmp_path: Path, detailed: bool
) -> None:
    doc = upstream_artifact(upstream, per_item=True, detailed=detailed)
    assert doc["seed_tts_asr_failed"] == 2 and doc["seed_tts_no_pcm"] == 1
    path = tmp_path / "qwen_omni_acc_seed_tts_20261129-021500.json"
    path.write_text(json.dumps(doc))
    out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "main"])
    assert out.exit_code == 0, out.output
    assert "disagrees" not in out.output  # upstream's summary and its items agree, as ours say
    stats = json.loads(runner.invoke(app, ["stats", out.stdout.strip(), "--json"]).stdout)
    official = stats["official"]
    assert official.pop("seed_tts_audio_capped") == 0  # ours: no clip was cut at the cap
    for key, value in official.items():
        assert doc[key] == value, key  # exactly, the mean included
    # Our tail and capped mean keep counting the silent clip (and the no-audio one) as broken.
    assert stats["n_scored"] + stats["n_failed"] == len(CASES) - 2  # request_failed, asr error
    if detailed:
        texts = db.execute(
            "SELECT count(*) AS n FROM omni.clip_audio WHERE thinker_text IS NOT NULL"
        )
        assert texts.fetchone()["n"] == len(CASES)


def test_d_a_summary_only_artifact_imports_as_such(upstream: Upstream, db, tmp_path: Path) -> None:
    doc = upstream_artifact(upstream, per_item=False, detailed=False)
    assert "seed_tts_wer_eval_items" not in doc
    path = tmp_path / "qwen_omni_acc_seed_tts_20261129-021500.json"
    path.write_text(json.dumps(doc))
    out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "main"])
    assert out.exit_code == 0 and "summary_only" in out.output
    run = db.execute("SELECT status, n_expected, summary FROM omni.run").fetchone()
    assert run["status"] == "summary_only" and run["n_expected"] == len(CASES)
    assert run["summary"]["seed_tts_content_error_mean"] == doc["seed_tts_content_error_mean"]
    # History, not an error: stats shows the official figures, marked summary-only ...
    key = out.stdout.strip()
    stats = json.loads(runner.invoke(app, ["stats", key, "--json"]).stdout)
    assert (
        stats["summary_only"]
        and stats["official"]["seed_tts_content_error_mean"] == (doc["seed_tts_content_error_mean"])
    )
    text = runner.invoke(app, ["stats", key])
    assert text.exit_code == 0 and "summary-only" in text.output
    # ... and the gate never decides from a mean alone: INFRA, saying which flags to add.
    other = tmp_path / "b.json"
    other.write_text(json.dumps(doc))
    assert (
        runner.invoke(app, ["import", "vllm-omni", str(other), "--branch", "rebase"]).exit_code == 0
    )
    decision = json.loads(runner.invoke(app, ["gate", "--json"]).stdout)[0]
    assert decision["verdict"] == "INFRA"
    assert "--seed-tts-wer-save-items --save-detailed" in " ".join(decision["reasons"])


def test_d_an_artifact_contradicting_its_items_warns(
    upstream: Upstream, db, tmp_path: Path
) -> None:
    doc = upstream_artifact(upstream, per_item=True, detailed=False)
    doc["seed_tts_content_error_mean"] = 0.1234
    path = tmp_path / "qwen_omni_acc_seed_tts_20261129-021500.json"
    path.write_text(json.dumps(doc))
    out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "main"])
    assert out.exit_code == 0
    assert "seed_tts_content_error_mean: artifact 0.1234, items give" in out.output


@pytest.mark.parametrize("failed_as", ["request_failed", "timeout_partial"])
def test_d_a_request_that_failed_after_audio_counts_once_as_upstream_counts_it(
    upstream: Upstream, failed_as: str
) -> None:
    """Upstream's writer leaves a failed request out of `evaluated` and the mean even when
    audio arrived (its case above carries a tone); our bench runs grade such audio, and the
    harness-style summary must still count the clip once, as a failed request. A timeout after
    output is one too (the harness's client ends it with success False)."""
    from omni_tasks.analysis.official import FIGURES, official_summary
    from omni_tasks.records import ClipRecord

    doc = upstream_artifact(upstream, per_item=True, detailed=False)
    items = {i["utterance_id"]: i for i in doc["seed_tts_wer_eval_items"]}
    records = []
    for i, (ref, what) in enumerate(CASES):
        item = items.get(f"u{i}", {})
        if what == "request_failed":  # failed after audio: stored, and graded by our pipeline
            rec = ClipRecord(f"u{i}", ref, failed_as, "graded", 0.75)
        elif what == "no_pcm":
            rec = ClipRecord(f"u{i}", ref, "no_audio", None, None)
        elif item.get("wer") is None:  # the ASR failures: silence heard, an exception
            status = "empty_transcript" if what == "" else "grader_error"
            rec = ClipRecord(f"u{i}", ref, "ok", status, None)
        else:
            rec = ClipRecord(f"u{i}", ref, "ok", "graded", float(item["wer"]))
        records.append(rec)
    ours = official_summary(records)
    assert {k: ours[k] for k in FIGURES} == {k: doc[k] for k in FIGURES}
