"""`make conformance-latest --vllm-omni-checkout DIR` compares our nightly deploy overlay, as the
nightly serves it on a platform, with the CI overlay upstream's tests build (`_CI_OVERLAYS` in
tests/helpers/stage_config.py, a dict literal read without running the module) as upstream's
Qwen3-Omni accuracy test serves it there (its `get_chunk_config()` switch, read from
tests/e2e/accuracy/qwen3_omni/test_qwen3_omni.py without running it): the same overlay and switch
read "the same" on every platform; a moved overlay names each field that differs; a flipped or
dropped switch is reported; a switch that can no longer be read says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.latest import ci_overlay_differences

# Upstream's `_CI_OVERLAYS["qwen3_omni_moe"]` at 157988875aca45d6d9ff19850f51157ec29925eb, in its
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
        "platforms": {
            "xpu": {
                "stages": [
                    {
                        "stage_id": 0,
                        "gpu_memory_utilization": 0.85,
                        "max_num_seqs": 1,
                        "tensor_parallel_size": 4,
                        "enforce_eager": True,
                        "max_num_batched_tokens": 4096,
                        "max_model_len": 4096,
                        "max_cudagraph_capture_size": 0,
                        "skip_mm_profiling": True,
                        "devices": "0,1,2,3",
                        "default_sampling_params": {"max_tokens": 100, "ignore_eos": False},
                    },
                    {
                        "stage_id": 1,
                        "gpu_memory_utilization": 0.6,
                        "max_num_seqs": 1,
                        "enforce_eager": True,
                        "max_num_batched_tokens": 4096,
                        "max_model_len": 4096,
                        "max_cudagraph_capture_size": 0,
                        "skip_mm_profiling": True,
                        "devices": "4",
                    },
                    {
                        "stage_id": 2,
                        "gpu_memory_utilization": 0.3,
                        "max_num_seqs": 1,
                        "max_num_batched_tokens": 100000,
                        "max_cudagraph_capture_size": 0,
                        "skip_mm_profiling": True,
                        "devices": "5",
                        "default_sampling_params": {"max_tokens": 2000},
                    },
                ],
            },
        },
    },
}
"""

# Upstream's accuracy test at 3da502a8eb88e4fa168e183fefa827c7f4e2b2b7, the part that decides the
# served deploy, with its own names (CHUNK: the switch get_chunk_config applies).
ACCURACY_TEST = '''
from tests.helpers.stage_config import get_deploy_config_path, modify_stage_config
from vllm_omni.platforms import current_omni_platform

models = ["Qwen/Qwen3-Omni-30B-A3B-Instruct"]

_CI_DEPLOY = get_deploy_config_path("ci/qwen3_omni_moe.yaml")
_CI_MIN_DAILY_OMNI_ACCURACY = "0.685"


def get_chunk_config(config_path: str | None = None):
    """Load the qwen3_omni CI deploy yaml with async_chunk modifications for streaming mode."""
    if config_path is None:
        config_path = _CI_DEPLOY
    return modify_stage_config(config_path, updates=CHUNK)


if current_omni_platform.is_xpu():
    stage_configs = [_CI_DEPLOY]
else:  # CUDA + ROCm MI325 share the same deploy config
    stage_configs = [get_chunk_config()]

test_params = [
    OmniServerParams(model=model, stage_config_path=stage_config)
    for model in models
    for stage_config in stage_configs
]
'''


def checkout(
    tmp_path: Path,
    max_seqs: str = "5",
    chunk: str = '{"async_chunk": True}',
    test: str | None = None,
) -> Path:
    helpers = tmp_path / "tests" / "helpers"
    helpers.mkdir(parents=True)
    (helpers / "stage_config.py").write_text(STAGE_CONFIG.replace("MAX_SEQS", max_seqs))
    accuracy = tmp_path / "tests" / "e2e" / "accuracy" / "qwen3_omni"
    accuracy.mkdir(parents=True)
    text = ACCURACY_TEST if test is None else test
    (accuracy / "test_qwen3_omni.py").write_text(text.replace("CHUNK", chunk))
    return tmp_path


@pytest.mark.parametrize("platform", ["cuda", "rocm", "xpu"])
def test_our_overlay_as_served_is_the_checkouts(tmp_path: Path, platform: str) -> None:
    assert ci_overlay_differences(checkout(tmp_path), platform=platform) == []


def test_a_moved_overlay_names_what_moved(tmp_path: Path) -> None:
    assert ci_overlay_differences(checkout(tmp_path, "8")) == ["stage 2 max_num_seqs: 5 != 8"]


def test_a_flipped_chunk_switch_is_reported(tmp_path: Path) -> None:
    """Upstream's get_chunk_config serving async_chunk off on CUDA: ours serves it on."""
    flipped = checkout(tmp_path, chunk='{"async_chunk": False}')
    assert ci_overlay_differences(flipped) == ["async_chunk: True != False"]
    assert ci_overlay_differences(flipped, platform="rocm") == ["async_chunk: True != False"]
    assert ci_overlay_differences(flipped, platform="xpu") == []  # XPU serves _CI_DEPLOY


def test_a_test_serving_the_bare_overlay_everywhere_is_reported(tmp_path: Path) -> None:
    bare = ACCURACY_TEST.replace("[get_chunk_config()]", "[_CI_DEPLOY]")
    assert ci_overlay_differences(checkout(tmp_path, test=bare)) == ["async_chunk: True != False"]


def test_a_switch_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    moved = ACCURACY_TEST.replace("current_omni_platform.is_xpu()", "on_xpu()")
    (line,) = ci_overlay_differences(checkout(tmp_path, test=moved))
    assert line.startswith("accuracy test: ") and "on_xpu()" in line
    gone = checkout(tmp_path / "gone")
    (gone / "tests" / "e2e" / "accuracy" / "qwen3_omni" / "test_qwen3_omni.py").unlink()
    (line,) = ci_overlay_differences(gone)
    assert "no tests/e2e/accuracy/qwen3_omni/test_qwen3_omni.py" in line
