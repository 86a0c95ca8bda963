"""A trigger form is an allow-list: a strict schema of what a person with trigger rights may
choose, checked when the form is submitted (the DAG's Params) and again in the task (a conf can
reach a task without passing Airflow's form).

A form may set run choices (branches, commits, seeds, a limit, a dataset, a variant, a grader's
backend and window) and may *choose among* what the deployment config offers: a target the
config names, a model or vLLM build listed under `form_choices`, a named deploy override under
`named_overrides`. It never supplies executables, packages, package indexes, environment
variables, namespaces, resources, ports, timeouts, URLs, grader models or free engine
arguments. A free deploy override may only touch the keys of FREE_OVERRIDE_SCHEMA. Every field's
shape (types, bounds, keys) is one definition, FIELDS, held at submit and in the task.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from omni_tasks import benchmarks
from omni_tasks.contracts.rerun import RERUN_SEED_BASE
from omni_tasks.series import DEFAULT_LANE


class FormError(ValueError):
    """A trigger form field outside the allow-list; the message names the field."""


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
MAX_LIST = 256


# The one definition of every form field's shape: a JSON schema per field, per form. Airflow's
# Params are built from it (dag_support/params.py: checked when the form is submitted), and
# check_form holds the form to it again in the task (schema_problem), before the checks against
# the config's offers. Every number is finite and ranged, an integer is never true/false (JSON
# schema's integer and number exclude booleans), every list and mapping is bounded.

Schema = dict[str, object]  # a schema as the builders make it (a reader takes any mapping)


def number(
    low: float, high: float, *, integer: bool = False, exclusive_low: bool = False
) -> Schema:
    """A finite number from `low` to `high` (an integer when `integer`). NaN passes every
    comparison, so `not` states the lower bound the way NaN fails: "not below it"."""
    below: Schema = (
        {"type": "number", "maximum": low}
        if exclusive_low
        else {"type": "number", "exclusiveMaximum": low}
    )
    bound = "exclusiveMinimum" if exclusive_low else "minimum"
    return {"type": "integer" if integer else "number", bound: low, "maximum": high, "not": below}


def text(max_length: int, pattern: str | None = None) -> Schema:
    return {"type": "string", "maxLength": max_length, **({"pattern": pattern} if pattern else {})}


def nullable(schema: Schema) -> Schema:
    """The schema, or null (an empty field: the config's value)."""
    return {**schema, "type": ["null", *(_types(schema) or [None])]}


def closed(properties: Mapping[str, Schema], refused: str, **kw: object) -> Schema:
    """A mapping of these keys only; `$comment` says why any other is refused."""
    return {
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
        "$comment": refused,
        **kw,
    }


# The reader (schema_problem, below) walks a schema as JSON: each keyword's value is narrowed
# where it is read. A keyword of the wrong shape is a bug in FIELDS, not a form's: TypeError.


def _sub(schema: Mapping[str, object], key: str) -> Mapping[str, object]:
    """The subschema under `key` (an empty one, admitting anything, when absent)."""
    found = schema.get(key, {})
    if not isinstance(found, Mapping):
        raise TypeError(f"schema keyword {key!r} is not a schema: {found!r}")
    return found


def _num(schema: Mapping[str, object], key: str) -> float | None:
    found = schema.get(key)
    if found is None or (isinstance(found, int | float) and not isinstance(found, bool)):
        return found
    raise TypeError(f"schema keyword {key!r} is not a number: {found!r}")


def _text(schema: Mapping[str, object], key: str) -> str | None:
    found = schema.get(key)
    if found is None or isinstance(found, str):
        return found
    raise TypeError(f"schema keyword {key!r} is not text: {found!r}")


def _list(schema: Mapping[str, object], key: str) -> list[object]:
    found = schema.get(key, [])
    if not isinstance(found, list):
        raise TypeError(f"schema keyword {key!r} is not a list: {found!r}")
    return found


def _types(schema: Mapping[str, object]) -> list[object] | None:
    """The schema's `type`, as a list (None when it names none)."""
    kinds = schema.get("type")
    if kinds is None:
        return None
    return list(kinds) if isinstance(kinds, list) else [kinds]


SHA = r"^[0-9a-fA-F]{7,40}$"
FULL_SHA = r"^[0-9a-f]{40}$"
SEED = number(0, 2**31 - 1, integer=True)
NIGHTLY_SEED = number(0, RERUN_SEED_BASE - 1, integer=True)  # the re-run's seeds lie above
LIMIT = number(1, 10_000_000, integer=True)
BUDGET = number(0, 100, exclusive_low=True)
NAME = text(200)
LANE = text(63, r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
MAX_STAGES = 16
TARGET_SCHEMA: Schema = text(
    310, r"^(simulator:[A-Za-z0-9_.+-]{1,60}|vllm-serve|https?://\S{1,300})$"
)
SERVER_SCHEMA: Schema = closed(
    {"model": text(200)}, "set by the deployment config only (a form may choose the model)"
)
VLLM_BUILD = r"^([0-9][0-9A-Za-z.+!_-]{0,63}|[0-9a-f]{40})$"
ENVIRONMENT_SCHEMA: Schema = closed(
    {"vllm": text(64, VLLM_BUILD)},
    "set by the deployment config only (a form may choose the vLLM build)",
)
GRADER_BOUNDS = {"beam_size": (1, 10), "batch_size": (1, 64)}
GRADER_SCHEMA: Schema = closed(
    {
        key: (
            nullable(number(*GRADER_BOUNDS[key], integer=True))
            if key in GRADER_BOUNDS
            else nullable(text(40))
        )
        for key in sorted(GRADER_KEYS)
    },
    "not a grader choice a form may make (the grader's model is the deployment config's)",
)
SAMPLING_SCHEMA: Schema = closed(
    {
        "temperature": number(0, 10),
        "top_p": number(0, 1, exclusive_low=True),
        "top_k": number(-1, 100_000, integer=True),
        "min_p": number(0, 1),
        "max_tokens": number(1, 1_048_576, integer=True),
        "repetition_penalty": number(0, 10, exclusive_low=True),
        "presence_penalty": number(-2, 2),
        "frequency_penalty": number(-2, 2),
        "seed": SEED,
        "ignore_eos": {"type": "boolean"},
    },
    "a free override may only set these sampling keys (anything else through the config's "
    "named_overrides)",
)
STAGE_SCHEMA: Schema = closed(
    {
        "stage_id": number(0, MAX_STAGES - 1, integer=True),
        "enforce_eager": {"type": "boolean"},
        "default_sampling_params": SAMPLING_SCHEMA,
        "max_num_seqs": number(1, 4096, integer=True),
        "max_num_batched_tokens": number(1, 1_048_576, integer=True),
        "gpu_memory_utilization": number(0, 1, exclusive_low=True),
        "async_chunk": {"type": "boolean"},
        "mm_processor_cache_gb": number(0, 1024),
    },
    "a free override may only set these stage keys (anything else through the config's "
    "named_overrides)",
    required=["stage_id"],
)
# Deploy keys a free override may touch: eager mode, batching and sampling defaults. Anything
# else (a stage's model, trust_remote_code, worker_cls, hf_overrides, runtime env) only through
# a named override of the config.
FREE_OVERRIDE_SCHEMA: Schema = closed(
    {
        "async_chunk": {"type": "boolean"},
        "stages": {"type": "array", "maxItems": MAX_STAGES, "items": STAGE_SCHEMA},
    },
    "a free override may only set async_chunk and stages (anything else through the config's "
    "named_overrides)",
)
# A named override (a name of the config's named_overrides) or a free one.
OVERRIDE_SCHEMA: Schema = {**FREE_OVERRIDE_SCHEMA, "type": ["object", "string"], "maxLength": 100}
ABLATION_SCHEMA: Schema = {
    **closed(
        {
            "name": text(100),
            "overrides": FREE_OVERRIDE_SCHEMA,
            "vllm": nullable(text(64, VLLM_BUILD)),
            "commit": nullable(text(40, SHA)),
            "why": text(1000),
        },
        "an ablation is {name, overrides | vllm | commit, why}: engine arguments only through "
        "the config's named_overrides",
        required=["name"],
    ),
    "type": ["object", "string"],
    "maxLength": 100,
}
_SERVING: dict[str, Schema] = {
    "server": SERVER_SCHEMA,
    "environment": ENVIRONMENT_SCHEMA,
    "grader": GRADER_SCHEMA,
    "overrides": OVERRIDE_SCHEMA,
}
# The benchmark families' own run options, by name (Benchmark.options): each family's schema.
_OPTIONS: dict[str, Schema] = {
    name: dict(option.schema) for name, option in benchmarks.form_options().items()
}
_ONE_SERIES: dict[str, Schema] = {
    "benchmark": nullable(text(60)),
    "lane": LANE,
    "branch": NAME,
    "baseline": NAME,
    "variant": NAME,
    "dataset": nullable(text(4096)),
    **_OPTIONS,
    "seed": SEED,
    "control": number(0, 10_000, integer=True),
    "budget": BUDGET,
    "alert_id": nullable(number(1, 2**63 - 1, integer=True)),
    **_SERVING,
}
FIELDS: dict[str, dict[str, Schema]] = {
    "nightly": {
        "benchmark": nullable(text(60)),
        "branches": {"type": ["null", "array"], "maxItems": 64, "items": NAME},
        "baseline": nullable(NAME),
        "dataset": nullable(text(4096)),
        "limit": nullable(LIMIT),
        "seeds": {"type": ["null", "array"], "maxItems": MAX_LIST, "items": NIGHTLY_SEED},
        "variant": nullable(NAME),
        **{k: nullable(v) for k, v in _OPTIONS.items()},
        "targets": {
            "type": ["null", "object"],
            "maxProperties": 64,
            "additionalProperties": TARGET_SCHEMA,
        },
        "commits": {
            "type": ["null", "object"],
            "maxProperties": 64,
            "additionalProperties": text(40, SHA),
        },
        **{k: nullable(v) for k, v in _SERVING.items()},
    },
    "bisect": {
        **_ONE_SERIES,
        "history": {"type": "array", "maxItems": MAX_LIST, "items": text(40, SHA)},
        "axis": {"type": "string", "enum": ["vllm-omni", "vllm"]},
        "omni_commit": nullable(text(40, SHA)),
        "target": nullable(TARGET_SCHEMA),
        "first_bad": nullable(text(40, SHA)),
        "limit": nullable(LIMIT),
        "alpha": number(0, 0.5, exclusive_low=True),
    },
    "ablate": {
        **_ONE_SERIES,
        "nightly": text(10, r"^([0-9]{4}-[0-9]{2}-[0-9]{2})?$"),
        "candidate_target": nullable(TARGET_SCHEMA),
        "baseline_target": nullable(TARGET_SCHEMA),
        "ablations": {"type": ["null", "array"], "maxItems": 16, "items": ABLATION_SCHEMA},
        "stage_isolation": {"type": "boolean"},
    },
    # The A/B form (deployment.resolve_ab checks it against the config's `ab:` section).
    "ab": {
        "repo": text(140, r"^[A-Za-z0-9_.-]{1,39}/[A-Za-z0-9_.-]{1,100}$"),
        "pr": nullable(number(1, 2**31 - 1, integer=True)),
        "base_sha": text(40, FULL_SHA),
        "head_sha": text(40, FULL_SHA),
        "series": nullable(text(300)),
        "budget": nullable(number(1, 10_000_000, integer=True)),
    },
}
# Fields each form may set freely (each still checked by its params model): all but the
# choices among the config's offers.
_OFFERS = {"targets", "ablations", *_SERVING}
FREE = {
    kind: frozenset(FIELDS[kind]) - set(TARGET_FIELDS[kind]) - _OFFERS
    for kind in ("nightly", "bisect", "ablate")
}


def field_schema(kind: str, field: str) -> Schema:
    """One field's schema in a form of `kind` (for its Airflow Param)."""
    return copy.deepcopy(FIELDS[kind][field])


def schema_problem(schema: Mapping[str, object], value: object, at: str) -> tuple[str, str] | None:
    """(field, why) of the first place `value` breaks `schema`, else None: the JSON-schema
    keywords FIELDS uses, read as jsonschema reads them (Airflow's Params)."""
    wanted = _types(schema)
    if wanted is not None and not any(_is(str(k), value) for k in wanted):
        return at, _shape(schema)
    if "not" in schema and schema_problem(_sub(schema, "not"), value, at) is None:
        return at, _shape(schema)
    if "enum" in schema and value not in (enum := _list(schema, "enum")):
        return at, "one of " + ", ".join(map(str, enum))
    if isinstance(value, int | float) and not isinstance(value, bool):  # _is("number", value)
        low, high = _num(schema, "minimum"), _num(schema, "maximum")
        above, below = _num(schema, "exclusiveMinimum"), _num(schema, "exclusiveMaximum")
        if (
            (low is not None and value < low)
            or (high is not None and value > high)
            or (above is not None and value <= above)
            or (below is not None and value >= below)
        ):
            return at, _shape(schema)
    elif isinstance(value, str):
        longest = _num(schema, "maxLength")
        if longest is not None and len(value) > longest:
            return at, f"at most {longest} characters"
        pattern = _text(schema, "pattern")
        if pattern is not None and not re.search(pattern, value):
            return at, f"{value[:60]!r} does not match {pattern}"
    elif isinstance(value, list):
        most = _num(schema, "maxItems")
        if most is not None and len(value) > most:
            return at, f"at most {most} entries"
        items = _sub(schema, "items")
        for i, item in enumerate(value):
            found = schema_problem(items, item, f"{at}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        return _mapping_problem(schema, value, at)
    return None


def _mapping_problem(
    schema: Mapping[str, object], value: Mapping[object, object], at: str
) -> tuple[str, str] | None:
    most = _num(schema, "maxProperties")
    if most is not None and len(value) > most:
        return at, f"at most {most} entries"
    for key in _list(schema, "required"):
        if key not in value:
            return f"{at}.{key}", "required"
    properties, other = _sub(schema, "properties"), schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{at}.{key}" if at else str(key)
        if isinstance(key, str) and key in properties:
            found = schema_problem(_sub(properties, key), item, where)
        elif other is False:
            allowed = ", ".join(sorted(properties))
            return where, f"{schema.get('$comment', 'not allowed here')} (allowed: {allowed})"
        else:
            found = schema_problem(other if isinstance(other, Mapping) else {}, item, where)
        if found is not None:
            return found
    return None


def _is(kind: str, value: object) -> bool:
    """jsonschema's types: a bool is neither an integer nor a number; 3.0 is an integer."""
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    types = {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}
    return isinstance(value, types[kind])


def _shape(schema: Mapping[str, object]) -> str:
    """What a value of `schema` is, in words."""
    kinds = _types(schema)
    wanted = [k for k in ([None] if kinds is None else kinds) if k != "null"]
    if wanted and wanted[0] in ("integer", "number"):
        word = "an integer" if wanted[0] == "integer" else "a finite number"
        low, high = _num(schema, "minimum"), _num(schema, "maximum")
        if low is None:
            low = _num(schema, "exclusiveMinimum")
        if low is None or high is None:
            return word
        above = " above" if "exclusiveMinimum" in schema else " from"
        return f"{word}{above} {low:g} to {high:g} (never true/false)"
    names = {"string": "text", "boolean": "true or false", "array": "a list", "object": "a mapping"}
    return " or ".join(names.get(str(k), str(k)) for k in wanted) or "empty"


def _fail(field: str, why: str) -> FormError:
    return FormError(f"trigger form: {field}: {why}")


def check_form(kind: str, given: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, object]:
    """The form's fields checked against the allow-list, their schema (FIELDS, as at submit)
    and the config's offers; returns them with named overrides resolved. Every refusal names
    its field. Past the schema every field has its shape (a target is text, `server` and
    `environment` hold only their choice, a free override and an ablation their allowed
    keys): what follows holds the values to the config's offers."""
    out: dict[str, Any] = {}
    for field, value in given.items():
        if field not in FIELDS[kind]:
            raise _fail(
                field,
                "set by the deployment config only: not a field this form may set "
                "(docs/operators/security.md)",
            )
        found = schema_problem(FIELDS[kind][field], value, field)
        if found is not None:
            raise _fail(*found)
        out[field] = value
    offered = offered_targets(config)
    for field in TARGET_FIELDS[kind]:
        if out.get(field) is not None:
            check_target(field, out[field], offered)
    for branch, target in (out.get("targets") or {}).items():
        check_target(f"targets.{branch}", target, offered)
    for section, name in CHOSEN.items():
        if name in (out.get(section) or {}):
            check_chosen(f"{section}.{name}", out[section][name], config)
    if out.get("overrides") is not None:
        out["overrides"] = resolve_override("overrides", out["overrides"], config)
    if out.get("ablations") is not None:
        out["ablations"] = [
            _ablation(f"ablations[{i}]", a, config) for i, a in enumerate(out["ablations"])
        ]
    if "lane" in out:
        out["lane"] = check_lane(out["lane"], config)
    return out


def check_lane(value: Any, config: Mapping[str, Any]) -> str:
    """A one-series form's lane: the lane of the configured series it runs on (a fleet
    config's `lane`, the default lane for a version 1 config or none), so its runs are
    recorded under a lane the config defines; the form's default lane means that series'."""
    own = str(config.get("lane") or DEFAULT_LANE)
    if value in (DEFAULT_LANE, own):
        return own
    raise _fail(
        "lane",
        f"{str(value)[:60]!r} is not a lane the deployment config defines for this series "
        f"(its lane: {own})",
    )


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
    if value.startswith("simulator:") or value in offered:
        return
    raise _fail(
        field,
        f"{value[:100]!r} is not a target the deployment config offers (simulator:PROFILE, or "
        f"one of: {', '.join(sorted(offered))})",
    )


def check_chosen(field: str, value: Any, config: Mapping[str, Any]) -> None:
    """`server.model` / `environment.vllm`, the one choice a form has in each (the schema
    refuses the rest of the section): the config's own value or one it offers."""
    if not _offered(field, value, config):
        listed = _listed(field, config)
        hint = f"; the config allows: {', '.join(map(str, listed))}" if listed else ""
        raise _fail(field, f"set by the deployment config only{hint}")


def _listed(field: str, config: Mapping[str, Any]) -> list[object]:
    """The choices of `field` listed under the config's `form_choices`."""
    return list((config.get("form_choices") or {}).get(field) or ())


def _offered(field: str, value: Any, config: Mapping[str, Any]) -> bool:
    """The config's own value of `field` (`section.name`), one listed under `form_choices`,
    or for `environment.vllm` a build name when the config's environment names a `vllm_index`
    (installed from there alone: --no-index, binary wheels only)."""
    section, name = field.split(".")
    if value == (config.get(section) or {}).get(name) or value in _listed(field, config):
        return True
    if field != "environment.vllm":
        return False
    index = (config.get(section) or {}).get("vllm_index")
    return bool(index) and isinstance(value, str) and bool(re.fullmatch(VLLM_BUILD, value))


def resolve_override(field: str, value: Any, config: Mapping[str, Any]) -> dict[str, object]:
    """A deploy override from a form: the name of one of the config's `named_overrides`, or a
    free override (its keys, types and bounds already held by FREE_OVERRIDE_SCHEMA)."""
    named = config.get("named_overrides") or {}
    if isinstance(value, str):
        if value not in named:
            raise _fail(
                field,
                f"{value[:60]!r} is not one of the config's named_overrides "
                f"({', '.join(named) or 'none'})",
            )
        return dict(named[value])
    return dict(value)


def _ablation(at: str, entry: Any, config: Mapping[str, Any]) -> Any:
    """An ablation from a form (ABLATION_SCHEMA's shape): the name of one of the config's
    named_overrides, or an entry whose vLLM build the config offers."""
    if isinstance(entry, str):
        return {"name": entry, "overrides": resolve_override(at, entry, config)}
    vllm = entry.get("vllm")
    if vllm is None or _offered("environment.vllm", vllm, config):
        return entry
    listed = ", ".join(map(str, _listed("environment.vllm", config))) or "none"
    raise _fail(
        f"{at}.vllm",
        f"a vLLM build the config offers (form_choices environment.vllm: {listed}, or a build "
        "of its environment.vllm_index)",
    )
