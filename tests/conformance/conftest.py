"""Upstream's released code as fixtures: one parameter per pinned vllm-omni version."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import numpy as np
import pytest
import yaml
from packaging.version import Version

from omni_tasks.harness import HARNESS
from omni_tasks.synthesis.stages import StageDefaults
from tests.conformance.upstream import WHEELS, Upstream
from tests.conformance.vllm_facts import CI_OVERLAY_MAX_TOKENS, settings, standins

SERVING = "vllm_omni.entrypoints.openai.serving_chat"
SERVING_CLS = "OmniOpenAIServingChat"
PATCH = "vllm_omni.benchmarks.patch.patch"


class StageConfig(dict[str, Any]):
    """What the serving code reads of a stage config (`get("stage_type")`,
    `.is_comprehension`)."""

    def __init__(self, comprehension: bool) -> None:
        super().__init__()
        self.is_comprehension = comprehension


class Request:
    """The parsed request as upstream's code reads it: the fields the body set (pydantic's
    `model_fields_set`), each readable as an attribute."""

    def __init__(self, body: dict[str, Any]) -> None:
        self._body = body
        self.model_fields_set = set(body)

    def __getattr__(self, name: str) -> Any:
        return self._body.get(name)


@dataclass
class UpstreamServer:
    """Upstream's request → per-stage SamplingParams mapping on a server with `deploy`."""

    upstream: Upstream
    deploy: dict[str, Any]

    def __post_init__(self) -> None:
        u = self.upstream
        sp = u.standins["vllm.sampling_params.SamplingParams"]
        stages = self.deploy["stages"]
        server = SimpleNamespace(
            engine_client=SimpleNamespace(
                stage_configs=[StageConfig(i == 0) for i in range(len(stages))],
                default_sampling_params_list=[sp(**s["default_sampling_params"]) for s in stages],
            ),
            _OPENAI_SAMPLING_FIELDS=u.class_value(SERVING, SERVING_CLS, "_OPENAI_SAMPLING_FIELDS"),
        )
        for name in (
            "_get_comprehension_stage_index",
            "_apply_request_overrides",
            "_to_sampling_params_list",
            "_build_sampling_params_list_from_request",
        ):
            setattr(server, name, functools.partial(u.method(SERVING, SERVING_CLS, name), server))
        self.server = server

    @property
    def stage_defaults(self) -> StageDefaults:
        return StageDefaults.from_deploy(
            self.deploy, f"qwen3_omni_moe.yaml {self.upstream.version}"
        )

    def stage_params(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """serving_chat's branch: a list goes through `_to_sampling_params_list`, otherwise
        `_build_sampling_params_list_from_request`."""
        if body.get("sampling_params_list") is not None:
            built = self.server._to_sampling_params_list(body["sampling_params_list"])
        else:
            built = self.server._build_sampling_params_list_from_request(Request(body))
        return [settings(p) for p in built]


def nightly_deploy(u: Upstream) -> dict[str, Any]:
    """The wheel's own Qwen3-Omni deploy yaml under the nightly's CI overlay."""
    doc = yaml.safe_load((u.root / "vllm_omni" / "deploy" / "qwen3_omni_moe.yaml").read_text())
    doc = copy.deepcopy(doc)
    for stage, tokens in zip(doc["stages"], CI_OVERLAY_MAX_TOKENS, strict=True):
        stage["default_sampling_params"]["max_tokens"] = tokens
    return doc


@pytest.fixture(scope="session", params=sorted(WHEELS))
def upstream(request: pytest.FixtureRequest) -> Upstream:
    return Upstream(request.param, standins(request.param))


def nearest_row(version: str) -> str:
    """The harness row the suite replays `version` against: its own, else the newest row
    older than it (the oldest row for a version older than every row). A release without a
    row then reads as "no row; rules agree with the nearest", not as rule failures."""
    if version in HARNESS:
        return version
    older = [v for v in HARNESS if Version(v) < Version(version)]
    return max(older, key=Version) if older else min(HARNESS, key=Version)


@pytest.fixture(scope="session")
def row(upstream: Upstream) -> str:
    """The harness row `upstream`'s release is held to (`nearest_row`)."""
    return nearest_row(upstream.version)


@pytest.fixture(scope="session")
def upstream_server(upstream: Upstream) -> UpstreamServer:
    return UpstreamServer(upstream, nightly_deploy(upstream))


@dataclass
class HarnessResult:
    success: bool
    text: str
    pcm: np.ndarray | None  # int16 at 24 kHz, as the harness hands it to Whisper
    error: str


def request_input(u: Upstream, url: str, body: dict[str, Any], extra: dict[str, Any]) -> Any:
    """vLLM's `RequestFuncInput` for `body`'s model, messages and output length, with the
    nightly's extra body, as `vllm bench serve --omni` builds it."""
    rfi_cls = u.load("vllm.benchmarks.lib.endpoint_request_func", ["RequestFuncInput"])[
        "RequestFuncInput"
    ]
    rfi = rfi_cls(
        prompt="",
        api_url=f"{url}/v1/chat/completions",
        prompt_len=1,
        output_len=body["max_tokens"],
        model=body["model"],
        extra_body=extra,
    )
    rfi.omni_chat_messages = body["messages"]
    return rfi


def request_function(u: Upstream) -> Any:
    """Upstream's own benchmark request function for the omni chat backend."""
    return u.load(PATCH, ["async_request_openai_chat_omni_completions"])[
        "async_request_openai_chat_omni_completions"
    ]


def harness_request(u: Upstream, url: str, body: dict[str, Any]) -> HarnessResult:
    """One request through upstream's own benchmark request function
    (`async_request_openai_chat_omni_completions`), set up as the seed-TTS nightly sets it."""
    fn = request_function(u)
    extra = {
        k: v
        for k, v in body.items()
        if k in ("modalities", "ref_audio", "ref_text", "task_type", "language", "max_new_tokens")
    }
    rfi = request_input(u, url, body, extra)
    rfi.seed_tts_row = True

    async def go() -> Any:
        async with aiohttp.ClientSession() as session:
            return await fn(rfi, session)

    previous = os.environ.get("SEED_TTS_WER_EVAL")
    os.environ["SEED_TTS_WER_EVAL"] = "1"  # the harness's switch that keeps the PCM for WER
    try:
        with _vllm_audio_module():
            out = asyncio.run(go())
    finally:
        if previous is None:
            os.environ.pop("SEED_TTS_WER_EVAL")
        else:
            os.environ["SEED_TTS_WER_EVAL"] = previous
    raw = getattr(out, "tts_output_pcm_bytes", None)
    pcm = np.frombuffer(raw, dtype=np.int16) if raw else None
    return HarnessResult(bool(out.success), out.generated_text, pcm, str(out.error or ""))


class _AudioResampler:
    """vLLM's resampler: imported by the harness's PCM export, called only when the audio is not
    already 24 kHz (never here: a call is a failure of the check)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the harness resampled: the stream was not 24 kHz")


@contextlib.contextmanager
def _vllm_audio_module() -> Iterator[None]:
    """The harness imports `vllm.multimodal.audio` inside the function at run time; vLLM is not
    installed here, so that one module is a stand-in for the duration of the call."""
    names = ("vllm", "vllm.multimodal", "vllm.multimodal.audio")
    saved = {n: sys.modules.get(n) for n in names}
    for n in names:
        sys.modules[n] = types.ModuleType(n)
    sys.modules["vllm.multimodal.audio"].AudioResampler = _AudioResampler  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for n, mod in saved.items():
            if mod is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = mod


@pytest.fixture
def prompt_wav(tmp_path: Path) -> Path:
    from tests.conformance.replay import write_prompt

    return write_prompt(tmp_path)
