"""Builders for test data (real data shapes, made here; nothing copied from real results)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omni_tasks.synthetic import ABShape, ab_artifacts


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def small_artifact(n: int = 5, date: str = "20261128-021500") -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "utterance_id": f"u{i}",
            "locale": "en",
            "wer": 0.0,
            "reference_raw": f"Sentence number {i}.",
            "asr_raw": f"sentence number {i}",
        }
        for i in range(n)
    ]
    return {
        "model_id": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "date": date,
        "max_concurrency": 10,
        "seed_tts_content_error_mean": 0.0,
        "seed_tts_content_evaluated": n,
        "generated_texts": [f"Sentence number {i}." for i in range(n)],
        "seed_tts_wer_eval_items": items,
    }


def ab_files(
    tmp_path: Path, shape: ABShape = ABShape(), seed: int = 0, date: str = "20261128-020000"
) -> tuple[Path, Path]:
    base, cand = ab_artifacts(shape, seed=seed, date=date)
    return (
        write_json(tmp_path / f"base_{seed}_{date}.json", base),
        write_json(tmp_path / f"cand_{seed}_{date}.json", cand),
    )
