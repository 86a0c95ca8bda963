"""Reading the deployment config: where it is (the Airflow Variable `omni_nightly_config`, the
YAML itself or a path, else `OMNI_NIGHTLY_CONFIG`, a path), its YAML read safely, and a
version 1 config (one series) turned into the one-series version 2 document it stands for,
so every reader reads one shape."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from omni_tasks.series import DEFAULT_LANE

# A config, form or trigger conf as parsed (YAML or JSON): untrusted until checked, so a value
# is narrowed where it is read.
Doc = dict[str, object]
VARIABLE = "omni_nightly_config"
ENV = "OMNI_NIGHTLY_CONFIG"
VERSIONS = (1, 2)
# A deployment config is a page of YAML; anchors may share blocks, not multiply them.
MAX_NODES = 100_000
# Sections merged key by key (defaults into a series, a form into its series): a form's
# `server: {model: B}` keeps the config's gpus.
MERGED = ("server", "environment")
# What the config offers a trigger form (deployment/forms.py).
OFFERS = ("form_choices", "named_overrides")
# A version 1 config's keys that are the config's, not its series'.
CONFIG_WIDE = (*OFFERS, "retention", "slack_actions", "ledger_digest")
FLEET_KEYS = ("version", "lanes", "defaults", "series", *CONFIG_WIDE, "ab", "buildkite")


class ConfigError(ValueError):
    """A deployment config (or trigger form) that cannot run; the message names the field."""


def source(variable: str | None) -> tuple[str, str] | None:
    """(where, YAML text) of the configured deployment, or None when nothing is configured."""
    if variable and variable.strip():
        if "\n" in variable or ":" in variable.split("/", 1)[0]:
            return f"Variable {VARIABLE}", variable
        return read_file(Path(variable), f"Variable {VARIABLE}")
    path = os.environ.get(ENV)
    return read_file(Path(path), ENV) if path else None


def read_file(path: Path, named_by: str) -> tuple[str, str]:
    try:
        return str(path), path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{named_by} names {path}, which cannot be read: {exc.strerror}"
        ) from None


def read(variable: str | None) -> tuple[str, Doc] | None:
    """(where, the config as a version 2 document), or None when nothing is configured."""
    found = source(variable)
    return None if found is None else (found[0], as_fleet(parse(*found)))


def parse(where: str, text: str) -> Doc:
    """The config's fields (with `version`), checked for shape only."""
    try:
        doc = safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML ({exc})") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of fields, got {type(doc).__name__}")
    version = doc.get("version")
    if version not in VERSIONS:
        raise ConfigError(
            f"{where}: version: expected {' or '.join(map(str, VERSIONS))}, got {version!r}"
        )
    return doc


def as_fleet(doc: Doc) -> Doc:
    """A version 1 config as a fleet of its one series on its own lane (the lane's settings
    the defaults); a version 2 config as it is. `version` stays what the file says."""
    if doc["version"] != 1:
        return doc
    series = {k: v for k, v in doc.items() if k not in (*CONFIG_WIDE, "version")}
    lane = series.setdefault("lane", DEFAULT_LANE)
    wide = {k: doc[k] for k in CONFIG_WIDE if k in doc}
    return {"version": 1, **wide, "lanes": {str(lane): {}}, "series": [series]}


def safe_load(text: str) -> Any:
    """yaml.safe_load, refusing a document whose aliases expand it past MAX_NODES nodes (a
    billion-laughs config is a few lines that every later reader would walk in full)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        try:
            if node is not None and _size(node, {}) > MAX_NODES:
                raise ConfigError(
                    f"the YAML expands to more than {MAX_NODES} values (aliases of aliases)"
                )
        except RecursionError:
            raise ConfigError("the YAML is nested too deeply") from None
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def _size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """The values `node` expands to, every alias counted in full (`sizes`: by node id, so a
    shared node is walked once)."""
    if id(node) not in sizes:
        parts = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            parts = [part for pair in node.value for part in pair]
        sizes[id(node)] = 1 + sum(_size(part, sizes) for part in parts)
    return sizes[id(node)]


def fleet_series(where: str, doc: Doc) -> list[Doc]:
    """Each series' fields: the defaults, then the series' own (server and environment merged
    key by key); `model` is the model its server serves (`server.model`)."""
    for key in doc:
        if key not in FLEET_KEYS:
            raise ConfigError(
                f"{where}: {key}: not a version 2 key ({names(sorted(FLEET_KEYS))}); series "
                "fields go under `defaults` or a series"
            )
    defaults, series = doc.get("defaults") or {}, doc.get("series")
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}: defaults: a mapping of series fields")
    if not isinstance(series, list) or not series:
        raise ConfigError(f"{where}: series: a list of at least one series")
    out = []
    for i, entry in enumerate(series):
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: series[{i}]: a mapping of series fields")
        fields = merged(defaults, entry)
        model = fields.pop("model", None)
        if model is not None:
            server = fields.get("server") or {}
            if not isinstance(server, dict):
                raise ConfigError(f"{where}: series[{i}]: server: a mapping of server fields")
            fields["server"] = {**server, "model": model}
        out.append(fields)
    return out


def merged(base: Doc, over: Doc, keys: tuple[str, ...] = MERGED) -> Doc:
    """`over`'s fields over `base`'s, the `keys` sections (both mappings) merged key by key."""
    out = {**base, **over}
    for key in keys:
        ours, theirs = base.get(key), over.get(key)
        if isinstance(ours, dict) and isinstance(theirs, dict):
            out[key] = {**ours, **theirs}
    return out


M = TypeVar("M", bound=BaseModel)


def config_section(
    found: tuple[str, Doc] | None, key: str, model: type[M], missing: str | None = None
) -> M:
    """A config-wide section (`retention:`, `buildkite:`…) of the config `read` found, as its
    model: its defaults without a config or the section, or ConfigError(`missing`) when the
    section is required."""
    raw = found[1].get(key) if found else None
    if not raw and missing is not None:
        raise ConfigError(f"the deployment config has no `{key}:` section: {missing}")
    try:
        return model.model_validate(raw or {})
    except ValidationError as exc:
        where = found[0] if found else "config"
        raise ConfigError(f"{where}: {key}: {field_errors(exc)}") from None


def section(doc: Doc, key: str) -> Doc:
    """`doc[key]` when it is a mapping, else empty (its shape is refused where it is checked)."""
    found = doc.get(key)
    return found if isinstance(found, dict) else {}


def field_errors(exc: ValidationError) -> str:
    """Pydantic's errors as `field: message` (a whole-model check names its field itself; an
    unknown tag of a discriminated union names the tag's field)."""
    out = []
    for e in exc.errors()[:3]:
        loc = ".".join(str(p) for p in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            loc = f"{loc}.{str(ctx.get('discriminator')).strip(chr(39) + '()')}"
            msg = f"{ctx.get('tag')!r} is not available (choose one of {ctx.get('expected_tags')})"
        out.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(out)


def names(values: Any) -> str:
    return ", ".join(str(v) for v in values) or "none"
