"""The nightly's deployment config: what a scheduled run benchmarks, where, and how long it may
take. A versioned YAML, named by the Airflow Variable `omni_nightly_config` (the YAML itself or
a path) or by `OMNI_NIGHTLY_CONFIG` (a path). Its keys are the trigger form's fields plus
`version` and `form_choices`; a manual run's non-empty form fields override it for that run,
except what names a process on the GPU worker (LOCKED): the form may only pick among the
config's `form_choices` for those (README "Untrusted input").

Validated when a DAG run starts: every error names its field, and the DAG turns it into a
failure that is not retried (a typo must not retry for many minutes). A scheduled run without
a config fails: it would otherwise benchmark nothing real.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from omni_tasks import benchmarks
from omni_tasks.jobs.nightly import NightlyParams

VARIABLE = "omni_nightly_config"
ENV = "OMNI_NIGHTLY_CONFIG"
VERSION = 1
STRATEGIES = ("existing", "venv")


# What names a process, its environment or its packages on the GPU worker: set by the
# deployment config (trusted, the operator's) alone; a trigger form may only pick one of the
# values the config lists for it under `form_choices` (e.g. `server.model: [A, B]`).
LOCKED = ("server.env", "server.model", "environment.requirements")
# Form sections merged key by key into the config's (a form's `server: {gpus: 1}` keeps the
# config's model), so a form cannot drop a locked value by replacing its section.
MERGED = ("server", "environment")
# A deployment config is a page of YAML; anchors may share blocks, not multiply them.
MAX_NODES = 100_000


class ConfigError(ValueError):
    """A deployment config (or trigger form) that cannot run; the message names the field."""


def source(variable: str | None) -> tuple[str, str] | None:
    """(where, YAML text) of the configured deployment, or None when nothing is configured."""
    if variable and variable.strip():
        if "\n" in variable or ":" in variable.split("/", 1)[0]:
            return f"Variable {VARIABLE}", variable
        return _read(Path(variable), f"Variable {VARIABLE}")
    path = os.environ.get(ENV)
    return _read(Path(path), ENV) if path else None


def _read(path: Path, named_by: str) -> tuple[str, str]:
    try:
        return str(path), path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{named_by} names {path}, which cannot be read: {exc.strerror}"
        ) from None


def parse(where: str, text: str) -> dict[str, Any]:
    """The config's fields (without `version`), checked for shape only."""
    try:
        doc = _safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML ({exc})") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping of fields, got {type(doc).__name__}")
    version = doc.pop("version", None)
    if version != VERSION:
        raise ConfigError(f"{where}: version: expected {VERSION}, got {version!r}")
    return doc


def _safe_load(text: str) -> Any:
    """yaml.safe_load, refusing a document whose aliases expand it past MAX_NODES nodes (a
    billion-laughs config is a few lines that every later reader would walk in full)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def size(n: yaml.Node) -> int:
            if id(n) not in sizes:
                children: list[Any] = []
                if isinstance(n, yaml.SequenceNode):
                    children = list(n.value)
                elif isinstance(n, yaml.MappingNode):
                    children = [part for pair in n.value for part in pair]
                sizes[id(n)] = 1 + sum(size(c) for c in children)
                if sizes[id(n)] > MAX_NODES:
                    raise ConfigError(
                        f"the YAML expands to more than {MAX_NODES} values (aliases of aliases)"
                    )
            return sizes[id(n)]

        try:
            size(node)
        except RecursionError:
            raise ConfigError("the YAML is nested too deeply") from None
        return loader.construct_document(node)
    finally:
        loader.dispose()


def form_fields(form: dict[str, Any]) -> dict[str, Any]:
    """A trigger form's given fields (the empty defaults dropped)."""
    return {k: v for k, v in form.items() if v not in (None, "", [], {})}


def check_form_locks(given: dict[str, Any], config: dict[str, Any]) -> None:
    """Refuse a form value for a LOCKED field unless it is the config's own value or one of
    the config's `form_choices` for it."""
    _check_choices(config.get("form_choices"), "deployment config")
    choices = config.get("form_choices") or {}
    if "form_choices" in given:
        raise ConfigError("trigger form: form_choices: set by the deployment config only")
    for dotted in LOCKED:
        section, name = dotted.split(".")
        part = given.get(section)
        if not isinstance(part, dict) or name not in part:
            continue
        value = part[name]
        own = (config.get(section) or {}).get(name)
        if value == own or value in (choices.get(dotted) or ()):
            continue
        allowed = choices.get(dotted)
        hint = f"; the config allows: {_names(allowed)}" if allowed else ""
        raise ConfigError(
            f"trigger form: {dotted}: set by the deployment config only (it names what runs "
            f"on the GPU worker){hint}"
        )


def deployment_config(variable: str | None) -> dict[str, Any]:
    """The configured deployment's fields ({} when none is configured)."""
    found = source(variable)
    return {} if found is None else parse(*found)


def resolve(
    form: dict[str, Any], variable: str | None = None, *, scheduled: bool = False
) -> NightlyParams:
    """The run's parameters: the deployment config, then the form's non-empty fields."""
    found = source(variable)
    given = form_fields(form)
    if found is None and (scheduled or "targets" not in given):
        raise ConfigError(
            f"no deployment config: set the Airflow Variable {VARIABLE} (YAML or a path) or "
            f"{ENV} (a path){'' if scheduled else ', or give targets in the trigger form'}; "
            "see README 'Deployment config'"
        )
    where, config = ("trigger form", {}) if found is None else (found[0], parse(*found))
    check_form_locks(given, config)
    config.pop("form_choices", None)  # checked; not a run parameter
    merged = {**config, **given}
    for section in MERGED:
        if isinstance(config.get(section), dict) and isinstance(given.get(section), dict):
            merged[section] = {**config[section], **given[section]}
    try:
        params = NightlyParams(**merged)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_first(exc)}") from None
    except ValueError as exc:  # a check of ours outside pydantic's field errors
        raise ConfigError(f"{where}: {exc}") from None
    check_complete(params, where)
    return params


def _check_choices(choices: Any, where: str) -> None:
    if choices is None:
        return
    if not isinstance(choices, dict) or not all(isinstance(v, list) for v in choices.values()):
        raise ConfigError(f"{where}: form_choices: a mapping of field → list of values")
    for key in choices:
        if key not in LOCKED:
            raise ConfigError(
                f"{where}: form_choices.{key}: only {_names(LOCKED)} are chosen this way "
                "(other fields are the form's to set)"
            )


def _first(exc: ValidationError) -> str:
    """Pydantic's errors as `field: message` (a whole-model check names its field itself)."""
    out = []
    for e in exc.errors()[:3]:
        msg = str(e["msg"]).removeprefix("Value error, ")
        out.append(f"{'.'.join(str(p) for p in e['loc'])}: {msg}" if e["loc"] else msg)
    return "; ".join(out)


def check_complete(p: NightlyParams, where: str) -> None:
    """What a run needs before its first request: a target per branch, known names, a dataset
    that exists, a grader that can be built."""
    from omni_tasks.grading.asr import GraderConfigError, GraderSpec
    from omni_tasks.synthesis.profiles import profile_names

    def fail(field: str, message: str) -> None:
        raise ConfigError(f"{where}: {field}: {message}")

    if not p.branches:
        fail("branches", "no branch to benchmark")
    for branch in p.branches:
        if branch not in p.targets:
            fail("targets", f"branch {branch!r} has no target (targets: {_names(p.targets)})")
    for branch in p.targets:
        if branch not in p.branches:
            fail(f"targets.{branch}", f"not one of the branches ({_names(p.branches)})")
        url = p.target_url(branch)
        if url.startswith("simulator:"):
            profile = url.split(":", 1)[1]
            if profile not in profile_names():
                fail(
                    f"targets.{branch}",
                    f"unknown simulator profile {profile!r} (known: {_names(profile_names())})",
                )
        elif url == "vllm-serve":
            strategy = p.environment.get("strategy", "existing")
            if strategy not in STRATEGIES:
                fail(
                    "environment.strategy",
                    f"{strategy!r} is not available (choose one of {_names(STRATEGIES)})",
                )
            if strategy == "venv" and not p.environment.get("repo"):
                fail("environment.repo", "the venv strategy needs the repo to install from")
        elif not url.startswith(("http://", "https://")):
            fail(
                f"targets.{branch}", f"{url!r} is not http(s)://…, simulator:PROFILE or vllm-serve"
            )
    if p.baseline not in p.branches:
        fail("baseline", f"{p.baseline!r} is not one of the branches ({_names(p.branches)})")
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    if p.benchmark is not None and p.benchmark not in runnable:
        fail("benchmark", f"unknown benchmark {p.benchmark!r} (known: {_names(runnable)})")
    choices = benchmarks.get(p.bench).family == "multiple_choice"
    if not p.seeds:
        fail("seeds", "at least one seed")
    if choices and p.dataset != "demo" and not (Path(p.dataset) / "qa.json").is_file():
        fail("dataset", f"{p.dataset} has no qa.json (a Daily-Omni root, or demo)")
    if not choices and p.dataset != "demo" and not (Path(p.dataset) / "meta.lst").is_file():
        fail("dataset", f"{p.dataset} has no meta.lst (a seed-tts-eval locale dir, or demo)")
    for branch in p.targets:
        deploy = p.target_deploy_config(branch)
        if deploy is not None and not Path(deploy).is_file():
            fail(f"targets.{branch}.deploy_config", f"{deploy} does not exist")
    if p.auto_bisect.enabled and not p.repo:
        fail("auto_bisect.enabled", "auto-bisect lists the commits of a range: set repo")
    if not p.transcript_mode:
        try:
            GraderSpec.from_params(p.grader).resolved()
        except TypeError as exc:
            fail("grader", str(exc).replace("GraderSpec.__init__() ", ""))
        except GraderConfigError as exc:
            fail("grader", str(exc))


def _names(values: Any) -> str:
    return ", ".join(str(v) for v in values) or "none"
