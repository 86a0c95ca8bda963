"""`make conformance-latest --vllm-omni-checkout DIR` compares our nightly deploy overlay with
the CI overlay upstream's tests build (`_CI_OVERLAYS` in tests/helpers/stage_config.py, a dict
literal read without running the module): the same overlay reads "the same", and a checkout
whose overlay moved names each field that differs."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.latest import ci_overlay_differences

# Upstream's `_CI_OVERLAYS["qwen3_omni_moe"]` at 0131cb5560450800b800e889fb849ea2c851bd3f, in its
# module's own shape (annotated assignment, other entries beside it).
STAGE_CONFIG = """
from typing import Any

_CI_OVERLAYS: dict[str, dict[str, Any]] = {
    "qwen2_5_omni": {"base_config": "qwen2_5_omni.yaml", "async_chunk": False, "stages": []},
    "qwen3_omni_moe": {
        "base_config": "qwen3_omni_moe.yaml",
        "async_chunk": False,
        "stages": [
            {
                "stage_id": 0,
                "max_num_seqs": 5,
                "max_model_len": 32768,
                "mm_processor_cache_gb": 0,
                "default_sampling_params": {"max_tokens": 150, "ignore_eos": False},
            },
            {
                "stage_id": 1,
                "max_num_seqs": 5,
                "gpu_memory_utilization": 0.5,
                "max_model_len": 32768,
                "default_sampling_params": {"max_tokens": 1000},
            },
            {
                "stage_id": 2,
                "max_num_seqs": MAX_SEQS,
                "default_sampling_params": {"max_tokens": 2000},
            },
        ],
    },
}
"""


def checkout(tmp_path: Path, max_seqs: str) -> Path:
    helpers = tmp_path / "tests" / "helpers"
    helpers.mkdir(parents=True)
    (helpers / "stage_config.py").write_text(STAGE_CONFIG.replace("MAX_SEQS", max_seqs))
    return tmp_path


def test_our_overlay_is_the_checkouts(tmp_path: Path) -> None:
    assert ci_overlay_differences(checkout(tmp_path, "5")) == []


def test_a_moved_overlay_names_what_moved(tmp_path: Path) -> None:
    assert ci_overlay_differences(checkout(tmp_path, "8")) == ["stage 2 max_num_seqs: 5 != 8"]
