"""Stand-ins for what upstream's functions need from vLLM and friends, and the facts this suite
pins that no released file states.

- `SamplingParams`: built per release from that vLLM release's own source
  (`upstream.sampling_params_class`): every field default as vLLM writes it (max_tokens 16…).
- `vllm.logger.init_logger`: a plain `logging.getLogger` (logging only).
- `pybase64`: the standard library's `base64` (pybase64 is its drop-in, faster twin).
- The CI overlay of the nightly (vllm-omni `tests/helpers/stage_config.py`, not in the wheel;
  REFERENCE.md §1): max_tokens 150 / 1000 / 2000 per stage.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from typing import Any

from tests.conformance.upstream import sampling_params_class

CI_OVERLAY_MAX_TOKENS = (150, 1000, 2000)
COMPARED = (
    "temperature",
    "top_p",
    "top_k",
    "repetition_penalty",
    "max_tokens",
    "seed",
    "min_tokens",
    "presence_penalty",
    "frequency_penalty",
)


class OmniDiffusionSamplingParams:  # never built: Qwen3-Omni's three stages are LLM stages
    def __init__(self, **kwargs: Any) -> None:
        raise AssertionError("a Qwen3-Omni stage was typed as diffusion")


def standins(version: str) -> dict[str, Any]:
    sp = sampling_params_class(version)
    return {
        "vllm.sampling_params.SamplingParams": sp,
        "vllm.SamplingParams": sp,
        "vllm_omni.inputs.data.OmniDiffusionSamplingParams": OmniDiffusionSamplingParams,
        "vllm.logger.init_logger": logging.getLogger,
        "pybase64": base64,
    }


def settings(params: Any) -> dict[str, Any]:
    """The fields that decide what a stage generates."""
    d = dataclasses.asdict(params)
    return {k: d[k] for k in COMPARED}
