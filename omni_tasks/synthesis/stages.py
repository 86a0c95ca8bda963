"""Per-stage sampling settings of a vLLM-Omni server, and the server's rule for a request's
`sampling_params_list` (REFERENCE.md §1).

The server builds a fresh `SamplingParams(**entry)` from each list entry: an entry *replaces*
its stage's deploy defaults, and every field it does not name takes vLLM's default (max_tokens
16!). Stages the list leaves out keep their deploy defaults. Without a list, the request's
OpenAI fields (temperature, max_tokens, …) override stage 0 only. So a run seed may reach the
stages only as *complete* settings: the deploy defaults the server runs with, with the seed set.
The conformance suite (`tests/conformance/`) checks all of this against upstream's own code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from omni_tasks.contracts import JsonObject

STAGE_NAMES = ("thinker", "talker", "code2wav")

# vLLM's SamplingParams defaults for the fields a deploy or a request sets (vllm/sampling_params.py;
# the conformance suite reads them from the matching vLLM release's source and compares).
VLLM_DEFAULTS: JsonObject = {
    "n": 1,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "seed": None,
    "stop": None,
    "stop_token_ids": None,
    "ignore_eos": False,
    "max_tokens": 16,
    "min_tokens": 0,
}

# Every field vLLM's SamplingParams takes (0.28, 0.30, 0.32; the conformance suite checks this
# against each pinned release's `sampling_params.py`): the server accepts them all in a
# sampling_params_list or a deploy config, and refuses anything else. Only VLLM_DEFAULTS'
# fields change what the simulator generates; the rest (logprobs, detokenize...) are accepted.
SAMPLING_FIELDS = frozenset(
    {
        *VLLM_DEFAULTS,
        "watermarking",
        "logprobs",
        "prompt_logprobs",
        "prompt_logprob_start",  # vLLM 0.32
        "prompt_logprob_token_ids",  # vLLM 0.32
        "logprob_token_ids",
        "flat_logprobs",
        "detokenize",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "include_stop_str_in_output",
        "output_kind",
        "stream_interval",
        "skip_clone",
        "output_text_buffer_length",
        "structured_outputs",
        "logit_bias",
        "allowed_token_ids",
        "extra_args",
        "routed_experts_prompt_start",
        "bad_words",
        "skip_reading_prefix_cache",
        "thinking_token_budget",
        "repetition_detection",
        "trace_decode_token_ids",
    }
)

# The request fields the server copies onto stage 0 when no list is sent (upstream's
# `OmniOpenAIServingChat._OPENAI_SAMPLING_FIELDS`; checked by the conformance suite).
REQUEST_OVERRIDES = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "min_tokens",
        "seed",
        "ignore_eos",
        "stop",
        "stop_token_ids",
        "frequency_penalty",
        "presence_penalty",
    }
)

# The nightly's Qwen3-Omni server: `vllm_omni/deploy/qwen3_omni_moe.yaml` (0.30.0) under the CI
# overlay (max_tokens 150 / 1000 / 2000). The simulator serves with these.
NIGHTLY_STAGE_DEFAULTS: tuple[JsonObject, ...] = (
    {"temperature": 0.0, "max_tokens": 150},
    {"seed": 42, "temperature": 0.9, "top_k": 50, "max_tokens": 1000, "repetition_penalty": 1.05},
    {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_tokens": 2000, "repetition_penalty": 1.1},
)


class DeployConfigError(ValueError):
    """A deploy config without the stages a request needs; the message names the file."""


def nightly_deploy() -> JsonObject:
    """The nightly's deploy as a document (engine settings as the 0.30.0 yaml sets them: only
    code2wav eager), which the simulator serves and deploy overrides merge into."""
    return {
        "stages": [
            {
                "stage_id": i,
                **({"enforce_eager": True} if i == 2 else {}),
                "default_sampling_params": dict(s),
            }
            for i, s in enumerate(NIGHTLY_STAGE_DEFAULTS)
        ]
    }


def merge_deploy(
    base: Mapping[str, Any], over: Mapping[str, Any], *, new_stages: bool = False
) -> JsonObject:
    """Deploy overrides merged the way vLLM-Omni merges its platform sections: mappings key by
    key, and `stages` entry by `stage_id` (so `{"stages": [{"stage_id": 1, "enforce_eager":
    true}]}` changes the talker only). An entry for a stage the deploy lacks is an error, unless
    `new_stages` (two sets of overrides combined: the result is still overrides)."""
    out = dict(base)
    for k, v in over.items():
        if k == "stages" and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = _merge_stages(out[k], v, new_stages)
        elif isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_deploy(out[k], v, new_stages=new_stages)
        else:
            out[k] = v
    return out


def _merge_stages(base: list[Any], over: list[Any], new_stages: bool) -> list[Any]:
    stages = [dict(s) if isinstance(s, Mapping) else s for s in base]
    for entry in over:
        ids = {s.get("stage_id"): i for i, s in enumerate(stages) if isinstance(s, dict)}
        if isinstance(entry, Mapping) and new_stages and entry.get("stage_id") not in ids:
            stages.append(dict(entry))
            continue
        if not isinstance(entry, Mapping) or entry.get("stage_id") not in ids:
            known = sorted(k for k in ids if isinstance(k, int))
            raise DeployConfigError(
                f"deploy overrides: each stages entry needs the stage_id of a stage the deploy "
                f"has ({known}), got {entry!r:.80}"
            )
        i = ids[entry["stage_id"]]
        stages[i] = merge_deploy(stages[i], entry, new_stages=new_stages)
    return stages


def engine_args(doc: Mapping[str, Any]) -> tuple[JsonObject, ...]:
    """Each stage's engine settings (all but its id and sampling defaults), in stage order."""
    return tuple(
        {k: v for k, v in s.items() if k not in ("stage_id", "default_sampling_params")}
        for s in doc.get("stages", [])
        if isinstance(s, Mapping)
    )


class InvalidStageSettings(ValueError):
    """A sampling_params_list the server would refuse (it raises on unknown fields)."""


@dataclass(frozen=True)
class StageDefaults:
    """Each stage's default sampling settings on the server, and where they were read."""

    stages: tuple[JsonObject, ...]
    source: str

    @classmethod
    def nightly(cls) -> StageDefaults:
        return cls(
            NIGHTLY_STAGE_DEFAULTS, "nightly deploy (qwen3_omni_moe.yaml 0.30.0 + CI overlay)"
        )

    @classmethod
    def from_deploy(cls, doc: Any, source: str) -> StageDefaults:
        """From a vLLM-Omni deploy config (`stages: [{stage_id, default_sampling_params}]`)."""
        stages = doc.get("stages") if isinstance(doc, dict) else None
        if not isinstance(stages, list) or len(stages) != len(STAGE_NAMES):
            raise DeployConfigError(
                f"{source}: expected a 'stages' list with {len(STAGE_NAMES)} stages "
                f"({', '.join(STAGE_NAMES)}), got {_describe(stages)}"
            )
        out = []
        for i, stage in enumerate(stages):
            params = stage.get("default_sampling_params") if isinstance(stage, dict) else None
            if not isinstance(params, dict):
                raise DeployConfigError(
                    f"{source}: stage {i} ({STAGE_NAMES[i]}) has no default_sampling_params"
                )
            if unknown := sorted(set(params) - SAMPLING_FIELDS):
                raise DeployConfigError(
                    f"{source}: stage {i} default_sampling_params has fields vLLM's "
                    f"SamplingParams does not take: {', '.join(unknown)}"
                )
            out.append(dict(params))
        return cls(tuple(out), source)

    @classmethod
    def load(cls, path: Path) -> StageDefaults:
        return cls.from_deploy(read_deploy(path), str(path))

    def seeded(self, body: Mapping[str, Any], seed: int) -> list[JsonObject]:
        """Complete per-stage settings with only the seed changed: what the server would apply
        to `body` without a list (stage 0 takes the request's OpenAI fields), plus the seed."""
        return [{**s, "seed": seed} for s in self.applied(body)]

    def applied(self, body: Mapping[str, Any]) -> list[JsonObject]:
        """The deploy defaults as a request without a list leaves them (fields set only)."""
        first = {**self.stages[0], **{k: body[k] for k in REQUEST_OVERRIDES if k in body}}
        return [first, *(dict(s) for s in self.stages[1:])]


# The nightly's deploy as an overlay file: the wheel's qwen3_omni_moe.yaml + the CI overlay.
CI_OVERLAY = Path(__file__).with_name("qwen3_omni_moe_ci.yaml")
MAX_BASE_DEPTH = 8


def read_deploy(path: Path, depth: int = 0) -> JsonObject:
    """A deploy yaml as vLLM-Omni resolves it: a `base_config` (relative to the file) is read
    first and this file's stages merge into it by `stage_id` (`resolve_deploy_yaml`)."""
    doc = _read_yaml(path)
    if not isinstance(doc, dict) or "base_config" not in doc:
        return doc if isinstance(doc, dict) else {"stages": None}
    if depth >= MAX_BASE_DEPTH:
        raise DeployConfigError(f"{path}: base_config nested more than {MAX_BASE_DEPTH} deep")
    doc = dict(doc)
    base = doc.pop("base_config")
    # The base lies beside the file or below it: a deploy config names no file elsewhere.
    inside = isinstance(base, str) and (path.parent / base).resolve().is_relative_to(
        path.parent.resolve()
    )
    if not inside:
        raise DeployConfigError(f"{path}: base_config must name a file in its own directory")
    return merge_deploy(read_deploy(path.parent / base, depth + 1), doc, new_stages=True)


def effective(body: Mapping[str, Any], defaults: StageDefaults) -> list[JsonObject]:
    """Each stage's full settings as the server applies them to `body` (the server's rule)."""
    entries = body.get("sampling_params_list")
    if entries is None:
        return [{**VLLM_DEFAULTS, **s} for s in defaults.applied(body)]
    if not isinstance(entries, Sequence) or not all(isinstance(e, Mapping) for e in entries):
        raise InvalidStageSettings("sampling_params_list must be a list of objects")
    for i, entry in enumerate(entries):
        if unknown := sorted(set(entry) - SAMPLING_FIELDS):
            raise InvalidStageSettings(f"stage {i}: unknown sampling fields {', '.join(unknown)}")
    # An entry replaces its stage's deploy defaults (no merge); later stages keep theirs.
    return [{**VLLM_DEFAULTS, **s} for s in (*entries, *defaults.stages[len(entries) :])]


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} stages"
    return "none" if value is None else type(value).__name__


# Where the shipped Qwen3-Omni deploy comes from: upstream's accuracy test, as it serves the CI
# overlay. Recorded with every run served under that deploy (jobs/nightly.py `served`).
QWEN3_OMNI_BASE = "qwen3_omni_moe.yaml"
QWEN3_OMNI_SOURCE: JsonObject = {
    "repo": "vllm-project/vllm-omni",
    "accuracy_test": "tests/e2e/accuracy/qwen3_omni/test_qwen3_omni.py",
    "accuracy_test_commit": "3da502a8eb88e4fa168e183fefa827c7f4e2b2b7",
    "overlay": 'tests/helpers/stage_config.py _CI_OVERLAYS["qwen3_omni_moe"]',
    "overlay_commit": "157988875aca45d6d9ff19850f51157ec29925eb",
    "served": "get_chunk_config() (async_chunk true) on CUDA and ROCm; the overlay as is on XPU",
}

# A lane's accelerator, the device plugin's resource name it asks for (`gpu_resource`, the vendor
# part), and the platform vLLM-Omni runs on there. A lane that names none is CUDA.
PLATFORMS = {"nvidia.com": "cuda", "amd.com": "rocm", "gpu.intel.com": "xpu", "huawei.com": "npu"}
DEFAULT_PLATFORM = "cuda"


def lane_platform(gpu_resource: str | None) -> str:
    """The platform of a lane's accelerator (`nvidia.com/gpu` → cuda, `amd.com/gpu` → rocm,
    `gpu.intel.com/xe` → xpu, `huawei.com/Ascend910` → npu; none → cuda)."""
    if not gpu_resource:
        return DEFAULT_PLATFORM
    vendor = str(gpu_resource).split("/", 1)[0]
    if vendor not in PLATFORMS:
        raise DeployConfigError(
            f"gpu_resource {str(gpu_resource)[:80]!r}: no platform is known for its vendor "
            f"(known: {', '.join(f'{v}/… → {p}' for v, p in PLATFORMS.items())})"
        )
    return PLATFORMS[vendor]


def served_switch(platform: str) -> JsonObject:
    """What upstream's Qwen3-Omni accuracy test puts over the CI overlay on `platform`:
    `get_chunk_config()` (async_chunk on) everywhere but XPU, which serves the overlay as it is
    (async_chunk off). Our shipped overlay says CUDA's; this says each platform's."""
    return {"async_chunk": platform != "xpu"}


@dataclass(frozen=True)
class LaneDeploy:
    """The deploy a lane serves: its platform (for another deploy, the accelerator's resource
    name where no platform is known for it), the overrides over the deploy config (the
    platform's switch and stage section, then the variant's), and the upstream source the
    deploy follows (None for a deploy that is not the Qwen3-Omni overlay)."""

    platform: str
    overrides: JsonObject
    source: JsonObject | None


def lane_deploy(
    deploy: Path | None, gpu_resource: str | None, variant: Mapping[str, Any]
) -> LaneDeploy:
    """The Qwen3-Omni overlay (a deploy over `qwen3_omni_moe.yaml`, as ours is) as upstream's
    accuracy test serves it on the lane's platform: its async_chunk switch, and the overlay's
    own section for that platform merged into the stages (the server merges it too; here the
    stage defaults the run seeds against see it). The variant's overrides come last. Any other
    deploy is served as configured."""
    doc = _read_yaml(deploy) if deploy is not None else None
    if not isinstance(doc, dict) or doc.get("base_config") != QWEN3_OMNI_BASE:
        vendor = str(gpu_resource or "nvidia.com").split("/", 1)[0]
        return LaneDeploy(PLATFORMS.get(vendor, str(gpu_resource)), dict(variant), None)
    platform = lane_platform(gpu_resource)  # the switch needs it: an unknown one is an error
    lane: JsonObject = served_switch(platform)
    platforms = doc.get("platforms")
    section = platforms.get(platform) if isinstance(platforms, dict) else None
    stages = section.get("stages") if isinstance(section, dict) else None
    if isinstance(stages, list):
        lane["stages"] = list(stages)
    return LaneDeploy(platform, merge_deploy(lane, variant, new_stages=True), QWEN3_OMNI_SOURCE)


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DeployConfigError(f"{path}: cannot read deploy config: {exc}") from exc
