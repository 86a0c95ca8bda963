"""A trigger form is an allow-list: a strict schema of what a person with trigger rights may
choose, checked when the form is submitted (the DAG's Params) and again in the task (a conf can
reach a task without passing Airflow's form).

A form may set run choices (branches, commits, seeds, a limit, a dataset, a variant, a grader's
backend and window) and may *choose among* what the deployment config offers: a target the
config names, a model or vLLM build listed under `form_choices`, a named deploy override under
`named_overrides`. It never supplies executables, packages, package indexes, environment
variables, namespaces, resources, ports, timeouts, URLs, grader models or free engine
arguments. A free deploy override may only touch the keys in OVERRIDE_KEYS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


class FormError(ValueError):
    """A trigger form field outside the allow-list; the message names the field."""


# Fields each form may set freely (each still checked by its params model).
RUN_CHOICES = frozenset(
    {
        "benchmark",
        "branches",
        "baseline",
        "commits",
        "seeds",
        "limit",
        "variant",
        "transcript_mode",
        "dataset",
        "prompt_template",
    }
)
FREE = {
    "nightly": RUN_CHOICES,
    "bisect": frozenset(
        {
            "history",
            "branch",
            "baseline",
            "first_bad",
            "transcript_mode",
            "dataset",
            "limit",
            "seed",
            "alpha",
            "budget",
            "control",
            "axis",
            "omni_commit",
            "variant",
            "benchmark",
            "lane",
            "alert_id",
        }
    ),
    "ablate": frozenset(
        {
            "nightly",
            "branch",
            "baseline",
            "variant",
            "benchmark",
            "lane",
            "transcript_mode",
            "dataset",
            "seed",
            "control",
            "budget",
            "alert_id",
            "stage_isolation",
        }
    ),
}
# Fields whose value must be one the deployment config offers (checked per form below).
TARGET_FIELDS = {
    "nightly": (),
    "bisect": ("target",),
    "ablate": ("candidate_target", "baseline_target"),
}
CHOSEN = {"server": "model", "environment": "vllm"}
# A grader a form may pick: backend, window and decoding; never a model (a path or a name the
# grader would fetch), never free options.
GRADER_KEYS = frozenset(
    {"backend", "precision", "window", "beam_size", "language", "harness_version", "batch_size"}
)
GRADER_BOUNDS = {"beam_size": (1, 10), "batch_size": (1, 64)}
# Deploy keys a free override may touch: eager mode, batching and sampling defaults. Anything
# else (a stage's model, trust_remote_code, worker_cls, hf_overrides, runtime env) only through
# a named override of the config.
OVERRIDE_KEYS = frozenset({"stages", "async_chunk"})
STAGE_KEYS = frozenset(
    {
        "stage_id",
        "enforce_eager",
        "default_sampling_params",
        "max_num_seqs",
        "max_num_batched_tokens",
        "gpu_memory_utilization",
        "async_chunk",
        "mm_processor_cache_gb",
    }
)
SAMPLING_KEYS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "max_tokens",
        "repetition_penalty",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "ignore_eos",
    }
)
MAX_LIST = 256


# The same allow-lists as JSON schemas, for the DAGs' Params: Airflow checks them when the form
# is submitted (the task checks again with check_form, against the config's offers).
TARGET_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": r"^(simulator:[A-Za-z0-9_.+-]{1,60}|vllm-serve|https?://\S{1,300})$",
}
SERVER_SCHEMA: dict[str, Any] = {
    "properties": {"model": {"type": "string", "maxLength": 200}},
    "additionalProperties": False,
}
ENVIRONMENT_SCHEMA: dict[str, Any] = {
    "properties": {
        "vllm": {"type": "string", "pattern": r"^([0-9][0-9A-Za-z.+!_-]{0,63}|[0-9a-f]{40})$"}
    },
    "additionalProperties": False,
}
GRADER_SCHEMA: dict[str, Any] = {
    "properties": {
        key: (
            {
                "type": ["null", "integer"],
                "minimum": GRADER_BOUNDS[key][0],
                "maximum": GRADER_BOUNDS[key][1],
            }
            if key in GRADER_BOUNDS
            else {"type": ["null", "string"], "maxLength": 40}
        )
        for key in sorted(GRADER_KEYS)
    },
    "additionalProperties": False,
}
_NUMBER: dict[str, Any] = {"type": ["number", "boolean"]}
OVERRIDE_SCHEMA: dict[str, Any] = {
    "properties": {
        "async_chunk": {"type": "boolean"},
        "stages": {
            "type": "array",
            "maxItems": 16,
            "items": {
                "type": "object",
                "required": ["stage_id"],
                "additionalProperties": False,
                "properties": {
                    **{key: _NUMBER for key in sorted(STAGE_KEYS)},
                    "stage_id": {"type": "integer", "minimum": 0, "maximum": 15},
                    "default_sampling_params": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {key: _NUMBER for key in sorted(SAMPLING_KEYS)},
                    },
                },
            },
        },
    },
    "additionalProperties": False,
}


def _fail(field: str, why: str) -> FormError:
    return FormError(f"trigger form: {field}: {why}")


def check_form(kind: str, given: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, object]:
    """The form's fields checked against the allow-list and the config's offers; returns them
    with named overrides resolved. Every refusal names its field."""
    allowed = FREE[kind] | set(TARGET_FIELDS[kind]) | {"targets", "server", "environment"}
    allowed |= {"grader", "overrides"} | ({"ablations"} if kind == "ablate" else set())
    out: dict[str, object] = {}
    for field, value in given.items():
        if field not in allowed:
            raise _fail(
                field,
                "set by the deployment config only: not a field this form may set "
                "(docs/operators/security.md)",
            )
        if isinstance(value, list) and len(value) > MAX_LIST:
            raise _fail(field, f"at most {MAX_LIST} entries")
        out[field] = value
    offered = offered_targets(config)
    for field in TARGET_FIELDS[kind]:
        if field in out:
            check_target(field, out[field], offered)
    if "targets" in out:
        if kind != "nightly":
            raise _fail("targets", "not a field of this form")
        if not isinstance(out["targets"], dict):
            raise _fail("targets", "a mapping of branch → target")
        for branch, target in out["targets"].items():
            check_target(f"targets.{branch}", target, offered)
    for section, name in CHOSEN.items():
        if section in out:
            check_chosen(section, out[section], config, name)
    if "grader" in out:
        check_grader(out["grader"])
    if "overrides" in out:
        out["overrides"] = resolve_override("overrides", out["overrides"], config)
    if "ablations" in out:
        out["ablations"] = _ablations(out["ablations"], config)
    return out


def form_of(kind: str, fields: Mapping[str, Any]) -> dict[str, object]:
    """The part of a run's parameters a form of `kind` may carry (a reproduce command's conf):
    its free fields, targets, the chosen model and vLLM build, the grader's choices, the
    ablations; the serving fields stay the config's."""
    keep = FREE[kind] | set(TARGET_FIELDS[kind]) | {"ablations"}
    out = {k: v for k, v in fields.items() if k in keep}
    for section, name in CHOSEN.items():
        value = (fields.get(section) or {}).get(name)
        if value is not None:
            out[section] = {name: value}
    grader = {k: v for k, v in (fields.get("grader") or {}).items() if k in GRADER_KEYS}
    if grader:
        out["grader"] = grader
    return out


def offered_targets(config: Mapping[str, Any]) -> set[str]:
    """The target values a form may name: every one the config's series use, and the config's
    `form_choices.targets`."""
    values: set[str] = {"vllm-serve"}
    for target in (config.get("targets") or {}).values():
        values.add(target["url"] if isinstance(target, dict) else str(target))
    values.update(str(t) for t in (config.get("form_choices") or {}).get("targets") or ())
    return values


def check_target(field: str, value: Any, offered: Iterable[str]) -> None:
    """A simulator profile (it runs nothing), or a target the config offers; never a URL the
    form invents (the worker would stream from wherever it points)."""
    if not isinstance(value, str):
        raise _fail(field, "a target name (simulator:PROFILE or one the config offers)")
    if value.startswith("simulator:") or value in offered:
        return
    raise _fail(
        field,
        f"{value[:100]!r} is not a target the deployment config offers (simulator:PROFILE, or "
        f"one of: {', '.join(sorted(offered))})",
    )


def check_chosen(section: str, value: Any, config: Mapping[str, Any], choosable: str) -> None:
    """`server` / `environment`: only the field a form may choose (the model, the vLLM
    build), set to the config's own value or one listed under `form_choices`."""
    if not isinstance(value, dict):
        raise _fail(section, "a mapping")
    choices = config.get("form_choices") or {}
    own = config.get(section) or {}
    for name, chosen in value.items():
        dotted = f"{section}.{name}"
        if name != choosable:
            raise _fail(
                dotted,
                "set by the deployment config only (it names what runs on the GPU worker, "
                "its packages, environment, resources or timeouts)",
            )
        listed = list(choices.get(dotted) or ())
        if chosen == own.get(name) or chosen in listed:
            continue
        if section == "environment" and vllm_offered(chosen, config):
            continue
        hint = f"; the config allows: {', '.join(map(str, listed))}" if listed else ""
        raise _fail(dotted, f"set by the deployment config only{hint}")


_VLLM_BUILD = re.compile(r"[0-9][0-9A-Za-z.+!_-]{0,63}|[0-9a-f]{40}")


def vllm_offered(value: Any, config: Mapping[str, Any]) -> bool:
    """A vLLM build is offered when the config's environment names a `vllm_index` (installed
    from there alone: --no-index, binary wheels only) and the value is a build name."""
    index = (config.get("environment") or {}).get("vllm_index")
    return bool(index) and isinstance(value, str) and bool(_VLLM_BUILD.fullmatch(value))


def check_grader(value: Any) -> None:
    if not isinstance(value, dict):
        raise _fail("grader", "a mapping of grader settings")
    for key, v in value.items():
        if key not in GRADER_KEYS:
            raise _fail(
                f"grader.{key}",
                f"not a grader choice a form may make (allowed: {', '.join(sorted(GRADER_KEYS))}"
                "; the grader's model is the deployment config's)",
            )
        if key in GRADER_BOUNDS and v is not None:
            low, high = GRADER_BOUNDS[key]
            if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
                raise _fail(f"grader.{key}", f"an integer from {low} to {high}")
        elif v is not None and (not isinstance(v, str) or len(v) > 40):
            raise _fail(f"grader.{key}", "a short name")


def resolve_override(field: str, value: Any, config: Mapping[str, Any]) -> dict[str, object]:
    """A deploy override from a form: the name of one of the config's `named_overrides`, or a
    free override touching only OVERRIDE_KEYS / STAGE_KEYS / SAMPLING_KEYS."""
    named = config.get("named_overrides") or {}
    if isinstance(value, str):
        if value not in named:
            raise _fail(
                field,
                f"{value[:60]!r} is not one of the config's named_overrides "
                f"({', '.join(named) or 'none'})",
            )
        return dict(named[value])
    check_free_override(field, value)
    return dict(value)


def check_free_override(field: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise _fail(field, "a named override or a mapping of deploy keys")
    for key, v in value.items():
        if key not in OVERRIDE_KEYS:
            raise _fail(f"{field}.{key}", _not_allowed(OVERRIDE_KEYS))
        if key == "async_chunk" and not isinstance(v, bool):
            raise _fail(f"{field}.{key}", "true or false")
    stages = value.get("stages", [])
    if not isinstance(stages, list):
        raise _fail(f"{field}.stages", "a list of {stage_id, ...}")
    for i, stage in enumerate(stages):
        at = f"{field}.stages[{i}]"
        if not isinstance(stage, dict):
            raise _fail(at, "a mapping with a stage_id")
        for key, v in stage.items():
            if key not in STAGE_KEYS:
                raise _fail(f"{at}.{key}", _not_allowed(STAGE_KEYS))
            if key == "default_sampling_params":
                if not isinstance(v, dict):
                    raise _fail(f"{at}.{key}", "a mapping of sampling settings")
                for name, setting in v.items():
                    if name not in SAMPLING_KEYS:
                        raise _fail(f"{at}.{key}.{name}", _not_allowed(SAMPLING_KEYS))
                    _scalar(f"{at}.{key}.{name}", setting)
            else:
                _scalar(f"{at}.{key}", v)


def _scalar(field: str, value: Any) -> None:
    if not isinstance(value, bool | int | float):
        raise _fail(field, "a number or true/false")


def _not_allowed(keys: Iterable[str]) -> str:
    return (
        "a free override may only set "
        + ", ".join(sorted(keys))
        + " (anything else through the config's named_overrides)"
    )


def _ablations(value: Any, config: Mapping[str, Any]) -> list[Any] | None:
    """An ablation list from a form: names of the config's named_overrides, or entries whose
    overrides pass the free-override allow-list and whose vLLM build the config offers."""
    if value is None:
        return value
    if not isinstance(value, list):
        raise _fail("ablations", "a list")
    out = []
    for i, entry in enumerate(value):
        at = f"ablations[{i}]"
        if isinstance(entry, str):
            out.append({"name": entry, "overrides": resolve_override(at, entry, config)})
            continue
        if not isinstance(entry, dict):
            raise _fail(at, "a named override or {name, overrides | vllm | commit, why}")
        if "overrides" in entry:
            check_free_override(f"{at}.overrides", entry["overrides"])
        if entry.get("vllm") is not None:
            listed = list((config.get("form_choices") or {}).get("environment.vllm") or ())
            own = (config.get("environment") or {}).get("vllm")
            if entry["vllm"] not in (own, *listed) and not vllm_offered(entry["vllm"], config):
                raise _fail(
                    f"{at}.vllm",
                    "a vLLM build the config offers (form_choices environment.vllm: "
                    f"{', '.join(map(str, listed)) or 'none'}, or a build of its "
                    "environment.vllm_index)",
                )
        out.append(entry)
    return out
