"""deploy/helm/values.yaml against the official chart's values.schema.json: every key path the
values use is one the schema declares (an excerpt of it, with the commit it was read at, is
tests/integration/data/airflow_chart_values_schema_excerpt.json), with a value of the declared
type. No Helm here to run `helm lint`; this is the part of it that catches a misspelt or moved
key, which the chart would otherwise ignore without a word."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
VALUES = REPO / "deploy" / "helm" / "values.yaml"
EXCERPT = Path(__file__).parent / "data" / "airflow_chart_values_schema_excerpt.json"

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[kind])


def schema_errors(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """What in `value` the schema does not allow: a key it does not declare (by path), a value
    of another type, a value outside its enum, a missing required key. A Kubernetes type
    (`$ref`) is not expanded: the manifests test checks those shapes."""
    errors: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            return [f"{where or '.'}: {type(value).__name__}, not {'/'.join(kinds)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not one of {schema['enum']}")
    if "$ref" in schema:
        return errors
    if isinstance(value, dict):
        declared = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{where}: {key} is required")
        for key, item in value.items():
            path = f"{where}.{key}"
            if key in declared:
                errors += schema_errors(item, declared[key], path)
            elif isinstance(extra, dict):  # a free-form map (config, annotations)
                errors += schema_errors(item, extra, path)
            else:
                errors.append(f"{path}: not a key of the chart's values")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors


def _values() -> dict[str, Any]:
    return yaml.safe_load(VALUES.read_text())


def _schema() -> dict[str, Any]:
    return json.loads(EXCERPT.read_text())


def test_the_values_name_the_schema_commit_they_were_checked_against() -> None:
    (named,) = re.findall(r"chart-schema: apache/airflow@([0-9a-f]{40})", VALUES.read_text())
    source = _schema()["source"]
    assert source["repository"] == "apache/airflow" and source["path"] == "chart/values.schema.json"
    assert named == source["commit"]


def test_every_key_of_the_values_is_in_the_chart_schema() -> None:
    assert schema_errors(_values(), _schema()) == []


def test_the_check_refuses_a_misspelt_a_misplaced_and_a_mistyped_key() -> None:
    schema = _schema()
    planted = copy.deepcopy(_values())
    planted["workers"]["persistance"] = {"enabled": True}  # misspelt
    planted["terminationGracePeriodSeconds"] = 600  # a workers key at the top level
    planted["workers"]["terminationGracePeriodSeconds"] = "7500"  # a string, not an integer
    planted["redis"]["passwordSecret"] = "omni-redis-password"  # not the chart's name
    planted["env"].append({"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})
    errors = schema_errors(planted, schema)
    assert ".workers.persistance: not a key of the chart's values" in errors
    assert ".terminationGracePeriodSeconds: not a key of the chart's values" in errors
    assert ".workers.terminationGracePeriodSeconds: str, not integer" in errors
    assert ".redis.passwordSecret: not a key of the chart's values" in errors
    # The chart's global `env` takes plain values only (a secret goes in extraEnv).
    n = len(planted["env"]) - 1
    assert f".env[{n}].valueFrom: not a key of the chart's values" in errors
    assert f".env[{n}]: value is required" in errors
    assert len(errors) == 6, errors
    # A free-form map (config) admits any section, but only scalar settings in it.
    planted = copy.deepcopy(_values())
    planted["config"]["logging"] = {"remote_logging": ["no"]}
    assert schema_errors(planted, schema) == [
        ".config.logging.remote_logging: list, not boolean/integer/number/string"
    ]


def test_the_first_user_and_redis_take_their_passwords_from_secrets() -> None:
    values = _values()
    secrets = {
        (d["metadata"]["name"], key)
        for d in yaml.safe_load_all((REPO / "deploy/k8s/secrets.example.yaml").read_text())
        if d
        for key in d["stringData"]
    }
    user = values["apiServer"]["defaultUser"]
    assert user["enabled"] is True and "password" not in user  # never the chart's admin/admin
    env = {e["name"]: e for e in values["createUserJob"]["env"]}
    args = " ".join(values["createUserJob"]["args"])
    (var,) = re.findall(r'-p "\$(\w+)"', args)
    ref = env[var]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"]) in secrets
    assert f"-u {user['username']}" in args and f"-r {user['role']}" in args
    assert (values["redis"]["passwordSecretName"], "password") in secrets
    assert values["redis"]["enabled"] is True and "password" not in values["redis"]


def test_the_chart_reads_the_dags_and_plugin_the_image_carries() -> None:
    """git-sync is off ("the image carries the DAG files of its version"): the chart's
    dags_folder and plugins_folder are the folders the image copies them into."""
    values = yaml.safe_load(VALUES.read_text())
    dockerfile = (REPO / "docker" / "Dockerfile").read_text()
    env = dict(re.findall(r"(AIRFLOW__CORE__(?:DAGS|PLUGINS)_FOLDER)=(\S+)", dockerfile))
    core = values["config"]["core"]
    assert values["dags"]["gitSync"]["enabled"] is False
    assert core["dags_folder"] == env["AIRFLOW__CORE__DAGS_FOLDER"]
    assert core["plugins_folder"] == env["AIRFLOW__CORE__PLUGINS_FOLDER"]
    copied = re.findall(r"^COPY\s+(?:--\S+\s+)*(\S+)\s+(\S+)", dockerfile, re.M)
    assert ("dags", core["dags_folder"]) in copied and ("plugins", core["plugins_folder"]) in copied
