"""Every number in a trigger form is finite and ranged, a bool is never a number, every list is
bounded: one definition (deployment/forms.FIELDS) held at submit (the DAGs' Params, as the API
server deserializes and validates them) and in the task (forms.check_form). Each hostile form
is refused by both, naming its field; a one-series form's lane is one the config defines."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from omni_tasks.deployment import forms
from omni_tasks.deployment.night import form_fields
from omni_tasks.deployment.one_series import one_series_form
from omni_tasks.deployment.reading import ConfigError

HISTORY = ["a" * 40, "b" * 40]
EAGER = {"stage_id": 1, "enforce_eager": True}


def _submit(params: dict[str, Any], conf: dict[str, Any]) -> None:
    """What the REST API does with a submitted conf: the DAG's params as the API server holds
    them (serialized, then deserialized), merged with the conf and validated."""
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.serialization.serialized_objects import BaseSerialization

    encoded = BaseSerialization._serialize_params_dict(ParamsDict(params))
    served = BaseSerialization._deserialize_params_dict(encoded)
    served.deep_merge(conf).validate()


def _form(kind: str) -> dict[str, Any]:
    from omni_tasks.dag_support import params

    return {
        "nightly": params.nightly_params,
        "bisect": params.bisect_params,
        "ablate": params.ablate_params,
        "ab": params.ab_params,
    }[kind]()


def _stages(**stage: Any) -> dict[str, Any]:
    return {"overrides": {"stages": [{"stage_id": 0, **stage}]}}


HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("nightly", _stages(max_num_seqs=1e308), "overrides.stages[0].max_num_seqs"),
    ("nightly", _stages(max_num_seqs=True), "overrides.stages[0].max_num_seqs"),
    ("nightly", _stages(gpu_memory_utilization=math.nan), "overrides.stages[0].gpu_memory"),
    ("nightly", _stages(gpu_memory_utilization=math.inf), "overrides.stages[0].gpu_memory"),
    ("nightly", _stages(enforce_eager=2), "overrides.stages[0].enforce_eager"),
    ("nightly", {"overrides": {"stages": [{"stage_id": True}]}}, "overrides.stages[0].stage_id"),
    ("nightly", {"overrides": {"stages": [EAGER] * 200}}, "overrides.stages"),
    ("nightly", {"overrides": {"stages": [{"enforce_eager": True}]}}, "overrides.stages[0]"),
    (
        "nightly",
        _stages(default_sampling_params={"temperature": math.nan}),
        "overrides.stages[0].default_sampling_params.temperature",
    ),
    (
        "nightly",
        _stages(default_sampling_params={"max_tokens": 1e308}),
        "overrides.stages[0].default_sampling_params.max_tokens",
    ),
    ("nightly", _stages(worker_cls="evil.W"), "overrides.stages[0].worker_cls"),
    ("nightly", {"limit": 10**12}, "limit"),
    ("nightly", {"limit": math.nan}, "limit"),
    ("nightly", {"seeds": [True]}, "seeds[0]"),
    ("nightly", {"seeds": [-1]}, "seeds[0]"),
    ("nightly", {"grader": {"beam_size": True}}, "grader.beam_size"),
    ("nightly", {"grader": {"model": "/etc/passwd"}}, "grader.model"),
    ("nightly", {"server": {"gpus": 64}}, "server.gpus"),
    ("nightly", {"commits": {"main": "--output=/x"}}, "commits.main"),
    ("bisect", {"history": HISTORY, "alpha": math.nan}, "alpha"),
    ("bisect", {"history": HISTORY, "budget": math.inf}, "budget"),
    ("bisect", {"history": HISTORY, "budget": 10**6}, "budget"),
    ("bisect", {"history": HISTORY, "seed": True}, "seed"),
    ("bisect", {"history": HISTORY, "control": 10**9}, "control"),
    ("bisect", {"history": HISTORY, "limit": math.nan}, "limit"),
    ("bisect", {"history": HISTORY, "alert_id": True}, "alert_id"),
    ("bisect", {"history": ["a" * 40] * 300}, "history"),
    ("bisect", {"history": HISTORY, "lane": "../x"}, "lane"),
    ("bisect", {"history": HISTORY, **_stages(max_num_seqs=math.nan)}, "overrides.stages[0]"),
    ("ablate", {"nightly": "2026-11-28", "budget": math.nan}, "budget"),
    ("ablate", {"nightly": "2026-11-28", "stage_isolation": 1}, "stage_isolation"),
    (
        "ablate",
        {"nightly": "2026-11-28", "ablations": [{"name": "x", **_stages(worker_cls="evil.W")}]},
        "ablations[0].overrides.stages[0].worker_cls",
    ),
    (
        "ablate",
        {"nightly": "2026-11-28", "ablations": [{"name": "x", "engine_args": ["--evil"]}]},
        "ablations[0].engine_args",
    ),
    (
        "ablate",
        {"nightly": "2026-11-28", "ablations": [{"name": "x", **_stages(max_num_seqs=1e308)}]},
        "ablations[0].overrides.stages[0].max_num_seqs",
    ),
    ("ablate", {"nightly": "2026-11-28", "ablations": [{"name": "x"}] * 17}, "ablations"),
]


@pytest.mark.parametrize(("kind", "conf", "field"), HOSTILE, ids=[h[2] for h in HOSTILE])
def test_a_hostile_form_is_refused_at_submit_and_in_the_task(
    kind: str, conf: dict[str, Any], field: str
) -> None:
    from airflow.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError) as at_submit:
        _submit(_form(kind), conf)
    assert f"param {field.split('.')[0].split('[')[0]}" in str(at_submit.value)
    with pytest.raises(forms.FormError) as in_task:
        forms.check_form(kind, form_fields(conf), {})
    assert f"trigger form: {field}" in str(in_task.value), str(in_task.value)


GOOD: list[tuple[str, dict[str, Any]]] = [
    (
        "nightly",
        {
            "seeds": [1, 2, 3],
            "limit": 5,
            "overrides": {
                "async_chunk": True,
                "stages": [
                    {**EAGER, "max_num_seqs": 8, "gpu_memory_utilization": 0.9},
                    {"stage_id": 2, "default_sampling_params": {"temperature": 0.0, "top_k": -1}},
                ],
            },
            "grader": {"beam_size": 5, "backend": "faster-whisper"},
            "commits": {"rebase": "3f2a9c1"},
        },
    ),
    ("bisect", {"history": HISTORY, "alpha": 0.05, "budget": 4, "control": 50}),
    (
        "ablate",
        {
            "nightly": "2026-11-28",
            "ablations": [{"name": "eager", "overrides": {"stages": [EAGER]}, "why": "talker"}],
        },
    ),
]


@pytest.mark.parametrize(("kind", "conf"), GOOD, ids=[g[0] for g in GOOD])
def test_a_form_within_the_bounds_passes_both(kind: str, conf: dict[str, Any]) -> None:
    _submit(_form(kind), conf)
    assert forms.check_form(kind, form_fields(conf), {}) == form_fields(conf)


def test_the_ab_form_is_bounded_at_submit() -> None:
    from airflow.exceptions import ParamValidationError

    good = {"repo": "vllm-project/vllm-omni", "pr": 7, "base_sha": "1" * 40, "head_sha": "2" * 40}
    _submit(_form("ab"), good)
    for bad in ({"pr": True}, {"pr": 1e308}, {"budget": math.nan}, {"repo": "a/b/c"}):
        with pytest.raises(ParamValidationError):
            _submit(_form("ab"), {**good, **bad})


def _numeric_schemas(schema: Any, at: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(schema, dict):
        kinds = schema.get("type")
        if set(kinds if isinstance(kinds, list) else [kinds]) & {"integer", "number"}:
            found.append((at, schema))
        for key, sub in schema.items():
            if key != "not":
                found += _numeric_schemas(sub, f"{at}/{key}")
    return found


def test_every_number_of_every_form_is_finite_ranged_and_never_a_bool() -> None:
    """Each numeric schema in FIELDS, read by jsonschema (Airflow's Params) and by the task's
    reader: both refuse NaN, infinities, bools and out-of-range values, and agree on all."""
    import jsonschema

    probes = [0, 1, 7, 0.5, -1, 1e308, -1e308, math.nan, math.inf, -math.inf, True, False, "1"]
    schemas = [n for kind in forms.FIELDS for n in _numeric_schemas(forms.FIELDS[kind], kind)]
    assert len(schemas) > 30
    for at, schema in schemas:
        assert "maximum" in schema and ("minimum" in schema or "exclusiveMinimum" in schema), at
        for probe in probes:
            ours = forms.schema_problem(schema, probe, "x") is None
            theirs = jsonschema.Draft202012Validator(schema).is_valid(probe)
            assert ours == theirs, (at, probe, ours, theirs)
            if isinstance(probe, bool) or (isinstance(probe, float) and not math.isfinite(probe)):
                assert not ours, (at, probe)


FLEET = {
    "version": 2,
    "lanes": {"cuda": {"queue": "gpu", "pool": "gpu"}, "rocm": {"queue": "rocm", "pool": "rocm"}},
    "series": [
        {
            "benchmark": "seed_tts_en",
            "lane": "cuda",
            "branches": ["main", "rebase"],
            "baseline": "main",
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        },
        {
            "benchmark": "seed_tts_en",
            "lane": "rocm",
            "branches": ["main", "rebase"],
            "baseline": "main",
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        },
    ],
}


@pytest.mark.parametrize("kind", ["bisect", "ablate"])
def test_a_one_series_form_runs_only_on_a_lane_the_config_defines(kind: str) -> None:
    config = yaml.safe_dump(FLEET)
    form: dict[str, Any] = (
        {"history": HISTORY, "target": "simulator:commit-history"}
        if kind == "bisect"
        else {"nightly": "2026-11-28"}
    )
    for lane in ("nowhere", "npu", "default-2"):
        with pytest.raises(ConfigError, match=r"trigger form: lane: .* not a lane"):
            one_series_form(kind, {**form, "lane": lane}, config)
    assert one_series_form(kind, {**form, "lane": "rocm"}, config)["lane"] == "rocm"
    assert one_series_form(kind, {**form, "lane": "cuda"}, config)["lane"] == "cuda"
    # The form's default lane is the configured series' own, never a lane of its own name.
    assert one_series_form(kind, {**form, "lane": "default"}, config)["lane"] == "cuda"
    # No config, or a version 1 config: the default lane only.
    assert one_series_form(kind, {**form, "lane": "default"}, None)["lane"] == "default"
    with pytest.raises(ConfigError, match="trigger form: lane"):
        one_series_form(kind, {**form, "lane": "cuda"}, None)


def _keywords(schema: Any) -> set[str]:
    """Every keyword of `schema` and its subschemas (property names are not keywords)."""
    if isinstance(schema, list):
        return set().union(*map(_keywords, schema))
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, sub in schema.items():
        if key in ("properties", "patternProperties", "$defs", "definitions"):
            found |= set().union(*map(_keywords, sub.values()))
        elif key not in ("enum", "const", "examples", "default", "required"):
            found |= _keywords(sub)
    return found


def test_every_form_reads_the_same_under_draft_7_as_under_2020_12() -> None:
    """Each Param names JSON Schema draft 7 (dag_support/params.py: its metaschema check costs
    a fifth of 2020-12's on every validation), so each field must mean under draft 7 what it
    means under 2020-12: no keyword only 2020-12 knows (draft 7 would ignore it, and the field
    would take what it refused), and every probe value, hostile or good, judged alike."""
    import jsonschema
    from jsonschema.validators import validator_for

    from omni_tasks.dag_support import params

    only_2020 = set(jsonschema.Draft202012Validator.VALIDATORS) - set(
        jsonschema.Draft7Validator.VALIDATORS
    )
    assert "prefixItems" in only_2020 and "unevaluatedProperties" in only_2020
    probes: list[Any] = [
        *(None, "", "main", "a" * 500, "../../etc/passwd", "3f2a9c1", "2026-11-28"),
        *(0, 1, -1, 7, 0.5, 1e308, math.nan, math.inf, True, False),
        *([], [1, 2, 3], ["a"], HISTORY, [{"name": "x"}], {}, {"a": 1}, {"vllm": "0.11.0"}),
        *({"model": "Qwen/Qwen3-Omni"}, {"rebase": "3f2a9c1"}, {"main": "simulator:main"}),
        *({"stages": [EAGER]}, _stages(max_num_seqs=1e308)["overrides"]),
    ]
    forms_ = {kind: _form(kind) for kind in ("nightly", "bisect", "ablate", "ab")}
    forms_["regrade"] = params.regrade_params()
    checked = 0
    for kind, form in forms_.items():
        for field, param in form.items():
            schema = param.schema
            assert validator_for(schema) is jsonschema.Draft7Validator, (kind, field)
            assert not _keywords(schema) & only_2020, (kind, field, _keywords(schema) & only_2020)
            draft7 = jsonschema.Draft7Validator(schema)
            draft2020 = jsonschema.Draft202012Validator(
                {k: v for k, v in schema.items() if k != "$schema"}
            )
            known = [c[field] for k, c, *_ in [*HOSTILE, *GOOD] if k == kind and field in c]
            for probe in [*probes, param.value, *schema.get("examples", []), *known]:
                assert draft7.is_valid(probe) == draft2020.is_valid(probe), (kind, field, probe)
                checked += 1
    assert checked > 1000
