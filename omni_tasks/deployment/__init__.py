"""The nightly's deployment config: what a scheduled run benchmarks, where, and how long it may
take. A versioned YAML, named by the Airflow Variable `omni_nightly_config` (the YAML itself or
a path) or by `OMNI_NIGHTLY_CONFIG` (a path).

Version 1 is one series: its keys are the trigger form's fields plus `version` and
`form_choices`. Version 2 is a fleet: `lanes` (name → queue, pool, GPUs per server),
`defaults` (any series field) and `series` (each a model × benchmark × lane with its branches,
baseline and targets; docs/operators/configure.md). A manual run's non-empty form
fields override every series for that run, within the form's allow-list (omni_tasks.trust.forms): a
form chooses among what the config offers (`form_choices`, `named_overrides`, its targets) and
never names a process, package, environment, resource or URL (docs/operators/security.md).

Validated when a DAG run starts: every error names its field, and the DAG turns it into a
failure that is not retried (a typo must not retry for many minutes). A scheduled run without
a config fails: it would otherwise benchmark nothing real.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from omni_tasks import benchmarks
from omni_tasks.config import get_settings
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.trust import forms

# A config, form or trigger conf as parsed (YAML or JSON): untrusted until checked, so a value
# is narrowed where it is read.
Doc = dict[str, object]
VARIABLE = "omni_nightly_config"
ENV = "OMNI_NIGHTLY_CONFIG"
VERSIONS = (1, 2)
STRATEGIES = ("existing", "venv", "image")


# Form sections merged key by key into the config's (a form's `server: {model: B}` keeps the
# config's gpus), so a form cannot drop a config value by replacing its section.
MERGED = ("server", "environment")
# What `form_choices` may offer the form: models, vLLM builds and targets.
CHOICE_KEYS = ("server.model", "environment.vllm", "targets")
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


def parse(where: str, text: str) -> Doc:
    """The config's fields (with `version`), checked for shape only."""
    try:
        doc = _safe_load(text)
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


def _section(doc: Doc, key: str) -> Doc:
    """`doc[key]` when it is a mapping, else empty (its shape is refused where it is checked)."""
    found = doc.get(key)
    return found if isinstance(found, dict) else {}


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def form_fields(form: Doc) -> Doc:
    """A trigger form's given fields (the empty defaults dropped)."""
    return {k: v for k, v in form.items() if v not in (None, "", [], {})}


def check_form(kind: str, given: Doc, config: Doc) -> Doc:
    """The form's fields through its allow-list (omni_tasks.trust.forms), against `config`
    (the series' fields with the config's form_choices and named_overrides)."""
    _check_choices(config.get("form_choices"), "deployment config")
    try:
        return forms.check_form(kind, given, config)
    except forms.FormError as exc:
        raise ConfigError(str(exc)) from None


def series_config(
    variable: str | None,
    benchmark: str | None = None,
    lane: str | None = None,
    model: str | None = None,
) -> Doc:
    """The configured series a one-series form (a bisect's, an ablation's) runs on ({} when
    nothing is configured): a version 1 config, or the fleet's series of that benchmark (and
    lane), else its first; with the config's form_choices and named_overrides. Its serving
    fields (repo, environment, server, overrides) are the run's; the form only chooses."""
    found = source(variable)
    if found is None:
        return {}
    doc = parse(*found)
    if doc.pop("version") == 1:
        return doc
    _check_choices(doc.get("form_choices"), found[0])
    series = _fleet_series(found[0], doc)
    for config in series:
        if (
            (benchmark is None or config.get("benchmark") == benchmark)
            and (lane in (None, "default") or config.get("lane") == lane)
            and (model is None or _section(config, "server").get("model") == model)
        ):
            break
    else:
        config = series[0]
    extra: Doc = {k: doc[k] for k in ("form_choices", "named_overrides") if k in doc}
    return {**config, **extra}


SERVING = ("repo", "environment", "server", "overrides", "grader")


def one_series_form(kind: str, form: Doc, variable: str | None) -> Doc:
    """A bisect's or an ablation's parameters: the form's given fields through their
    allow-list, over the serving fields of the configured series they name (by benchmark,
    lane and model). What runs on the worker is the config's; the form only chooses."""
    given = form_fields(form)
    config = series_config(
        variable,
        _text(given.get("benchmark")),
        _text(given.get("lane")),
        _text(_section(given, "server").get("model")),
    )
    require_capability(kind, _text(given.get("benchmark") or config.get("benchmark")))
    return {
        **config_defaults(kind, given, config),
        **with_serving(check_form(kind, given, config), config),
    }


def require_capability(kind: str, benchmark: str | None) -> None:
    """A bisect or an ablation of a family that cannot do it is refused with the form, naming
    the benchmark and what its family lacks (never on a GPU task)."""
    from omni_tasks.benchmarks.base import MissingCapability
    from omni_tasks.config import get_settings

    doing = {"bisect": "bisected", "ablate": "ablated"}.get(kind)
    if doing is None:
        return
    try:
        benchmarks.get(benchmark or get_settings().benchmark).require(kind, doing)
    except (MissingCapability, benchmarks.UnknownBenchmark) as exc:
        raise ConfigError(f"benchmark: {exc}") from None


# Which branch each target field of a one-series form serves.
TARGET_BRANCH = {
    "bisect": {"target": ("branch", "rebase")},
    "ablate": {"candidate_target": ("branch", "rebase"), "baseline_target": ("baseline", "main")},
}


def config_defaults(kind: str, given: Doc, config: Doc) -> Doc:
    """What a form left empty that the configured series answers: each target field, the
    series' target for that branch; the dataset, the series' (production defaults: the
    simulator is only what a demo's config or form names)."""
    out: Doc = {}
    targets = config.get("targets") or {}
    for field, (branch_field, default) in TARGET_BRANCH.get(kind, {}).items():
        branch = given.get(branch_field, default)
        if field not in given and isinstance(targets, dict) and branch in targets:
            out[field] = targets[branch]
    if "dataset" not in given and config.get("dataset"):
        out["dataset"] = config["dataset"]
    return out


def with_serving(form: Doc, config: Doc) -> Doc:
    """A one-series form's fields over the config's serving fields and grader (sections merged
    key by key): what runs on the worker is the config's."""
    from omni_tasks.synthesis.stages import merge_deploy

    out = {k: config[k] for k in SERVING if config.get(k) not in (None, {}, "")}
    for key, value in form.items():
        current = out.get(key)
        if key in (*MERGED, "grader") and isinstance(current, dict) and isinstance(value, dict):
            out[key] = {**current, **value}
        elif key == "overrides" and isinstance(current, dict) and isinstance(value, dict):
            out[key] = merge_deploy(current, value, new_stages=True)
        else:
            out[key] = value
    return out


def resolve(form: Doc, variable: str | None = None, *, scheduled: bool = False) -> NightlyParams:
    """The run's parameters: the deployment config, then the form's non-empty fields."""
    found = source(variable)
    given = form_fields(form)
    if found is None and (scheduled or "targets" not in given):
        raise ConfigError(
            f"no deployment config: set the Airflow Variable {VARIABLE} (YAML or a path) or "
            f"{ENV} (a path){'' if scheduled else ', or give targets in the trigger form'}; "
            "see docs/operators/configure.md"
        )
    where, config = ("trigger form", {}) if found is None else (found[0], parse(*found))
    if config.pop("version", 1) != 1:
        raise ConfigError(f"{where}: a fleet config (version 2): read it with resolve_night")
    return _series_params(config, given, where)


def _series_params(config: Doc, given: Doc, where: str) -> NightlyParams:
    """One series' parameters: its config, then the form's given fields (allow-list checked)."""
    given = check_form("nightly", given, config)
    config = {k: v for k, v in config.items() if k not in NOT_SERIES_FIELDS}
    merged = {**config, **given}
    for section in MERGED:
        ours, theirs = config.get(section), given.get(section)
        if isinstance(ours, dict) and isinstance(theirs, dict):
            merged[section] = {**ours, **theirs}
    try:
        params = NightlyParams.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_first(exc)}") from None
    except ValueError as exc:  # a check of ours outside pydantic's field errors
        raise ConfigError(f"{where}: {exc}") from None
    check_complete(params, where)
    return params


class Lane(BaseModel):
    """A hardware lane: where its GPU tasks are queued, the pool that bounds them, and how many
    GPUs (pool slots) one server takes."""

    model_config = ConfigDict(extra="forbid")
    queue: str = "gpu"
    pool: str = "gpu"
    gpus_per_server: int = Field(default=2, ge=1, le=64)
    # The accelerator a server pod asks for (environment.strategy image): nvidia.com/gpu,
    # amd.com/gpu, or the Ascend device plugin's huawei.com/Ascend910.
    gpu_resource: str = Field(default="nvidia.com/gpu", pattern=r"^[a-z0-9.-]+/[A-Za-z0-9._-]+$")
    # Airflow's execution_timeout for the lane's GPU tasks: above a series' own
    # gpu_task_timeout_s (6 h by default), so the task's deadline stops it first and cleanly.
    execution_timeout_s: float = Field(default=6.5 * 3600, gt=0, le=48 * 3600)

    @property
    def execution_timeout(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.execution_timeout_s)


# A lane names Airflow tasks (`run_branch__LANE`), queues and pools: a plain name.
_LANE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
DEFAULT_LANES = {DEFAULT_LANE: Lane()}


@dataclass(frozen=True)
class Night:
    """What one night of the nightly runs: its lanes and its series (each a NightlyParams)."""

    lanes: dict[str, Lane]
    series: list[NightlyParams]

    def find(self, series_key: str, variant: str) -> NightlyParams:
        for p in self.series:
            if (p.series.key, p.variant) == (series_key, variant):
                return p
        raise ConfigError(f"series {series_key} ({variant}) is not in the deployment config")


def resolve_night(form: Doc, variable: str | None = None, *, scheduled: bool = False) -> Night:
    """The night's lanes and series: a version 1 config (or a complete form) is one series on
    the default lane; a version 2 config lists them. The form's fields apply to every series."""
    found = source(variable)
    doc = None if found is None else parse(*found)  # the YAML read and walked once
    if found is None or doc is None or doc["version"] == 1:
        return Night(dict(DEFAULT_LANES), [resolve(form, variable, scheduled=scheduled)])
    return _fleet_night(found[0], doc, form)


def _fleet_night(where: str, doc: Doc, form: Doc) -> Night:
    """A version 2 config's night (its YAML already parsed)."""
    given = form_fields(form)
    _check_choices(doc.get("form_choices"), where)
    lanes = _lanes(where, doc.get("lanes"))
    out: list[NightlyParams] = []
    seen: set[tuple[str, str]] = set()
    for i, config in enumerate(_fleet_series(where, doc)):
        at = f"{where}: series[{i}]"
        name, server = config.get("lane"), config.setdefault("server", {})
        if not isinstance(name, str) or name not in lanes:
            raise ConfigError(f"{at}: lane: {name!r} is not one of the lanes ({_names(lanes)})")
        if not isinstance(server, dict):
            raise ConfigError(f"{at}: server: a mapping of server fields")
        lane = lanes[name]
        server.setdefault("gpus", lane.gpus_per_server)
        server.setdefault("gpu_resource", lane.gpu_resource)
        extra = {k: doc.get(k) for k in ("form_choices", "named_overrides")}
        params = _series_params({**config, **extra}, given, at)
        ident = (params.series.key, params.variant)
        if ident in seen:
            raise ConfigError(
                f"{at}: {params.series.label} ({params.variant}) is listed twice: one series, "
                "one baseline"
            )
        seen.add(ident)
        out.append(params)
    return Night(lanes, out)


_FLEET_KEYS = {
    "version",
    "lanes",
    "defaults",
    "series",
    "form_choices",
    "named_overrides",
    "ab",
    "buildkite",
    "retention",
    "slack_actions",
}
# Keys of a config (either version) that are not a series' fields.
NOT_SERIES_FIELDS = ("form_choices", "named_overrides", "retention", "slack_actions")


class Retention(BaseModel):
    """The config's `retention:` section: how long clip audio is kept."""

    model_config = ConfigDict(extra="forbid")
    audio_days: int = Field(default=90, ge=1, le=3650)


def retention(variable: str | None = None) -> Retention:
    """The configured retention (the defaults without a config or a `retention:` section)."""
    found = source(variable)
    doc = None if found is None else parse(*found)
    raw = (doc or {}).get("retention") or {}
    try:
        return Retention.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{found[0] if found else 'config'}: retention: {_first(exc)}") from None


SlackId = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,24}$")]


class SlackActions(BaseModel):
    """The config's `slack_actions:` section: who may use the alerts' Acknowledge and Ignore
    buttons (alerts/interactions.py). A click is taken only from a Slack user id in `users`
    (when listed) made in a channel id in `channels` (when listed); with neither listed, or
    no section, every click is refused."""

    model_config = ConfigDict(extra="forbid")
    users: list[SlackId] = Field(default_factory=list, max_length=1000)  # U…/W… ids
    channels: list[SlackId] = Field(default_factory=list, max_length=1000)  # C…/G… ids

    def permits(self, user_id: str, channel_id: str | None) -> bool:
        if not (self.users or self.channels):
            return False
        return (not self.users or user_id in self.users) and (
            not self.channels or channel_id in self.channels
        )


def slack_actions(variable: str | None = None) -> SlackActions:
    """The configured `slack_actions:` allow-list (empty, refusing every click, without one)."""
    found = source(variable)
    doc = None if found is None else parse(*found)
    raw = (doc or {}).get("slack_actions") or {}
    try:
        return SlackActions.model_validate(raw)
    except ValidationError as exc:
        where = found[0] if found else "config"
        raise ConfigError(f"{where}: slack_actions: {_first(exc)}") from None


def _fleet_series(where: str, doc: Doc) -> list[Doc]:
    """Each series' fields: the defaults, then the series' own (server and environment merged
    key by key); `model` is the model its server serves (`server.model`)."""
    for key in doc:
        if key not in _FLEET_KEYS:
            raise ConfigError(
                f"{where}: {key}: not a version 2 key ({_names(sorted(_FLEET_KEYS))}); series "
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
        merged = {**defaults, **entry}
        for section in MERGED:
            if isinstance(defaults.get(section), dict) and isinstance(entry.get(section), dict):
                merged[section] = {**defaults[section], **entry[section]}
        model = merged.pop("model", None)
        if model is not None:
            merged["server"] = {**(merged.get("server") or {}), "model": model}
        out.append(merged)
    return out


def _lanes(where: str, raw: Any) -> dict[str, Lane]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: lanes: a mapping of lane name → {{queue, pool, ...}}")
    out = {}
    for name, fields in raw.items():
        if not isinstance(name, str) or not _LANE_NAME.match(name):
            raise ConfigError(f"{where}: lanes: {str(name)[:60]!r} is not a lane name")
        try:
            out[name] = Lane(**(fields or {}))
        except (ValidationError, TypeError) as exc:
            detail = _first(exc) if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"{where}: lanes.{name}: {detail}") from None
    return out


@dataclass(frozen=True)
class DagUnit:
    """One series' chain of nightly tasks (heads, GPU runs, statistics, decision, delivery):
    it depends on its own GPU tasks and their retries only, so a failing series never delays
    another's alert. `key` is its Series.key; None for a version 1 config's one series."""

    suffix: str  # "" for a version 1 config's one series (its tasks keep the plain ids)
    key: str | None
    lane: str
    config: Lane
    concurrency: bool = False  # its config asks for the concurrency check each night

    def task_id(self, task: str) -> str:
        return f"{task}__{self.suffix}" if self.suffix else task

    def on_gpu(self, task: str) -> GpuPlacement:
        """A GPU task's `.override` arguments: its lane's queue and pool, one server's GPUs as
        pool slots, the lane's execution timeout."""
        lane = self.config
        return {
            "task_id": self.task_id(task),
            "queue": lane.queue,
            "pool": lane.pool,
            "pool_slots": lane.gpus_per_server,
            "execution_timeout": lane.execution_timeout,
        }


class GpuPlacement(TypedDict):
    task_id: str
    queue: str
    pool: str
    pool_slots: int
    execution_timeout: dt.timedelta


def dag_units(path: str | None = None) -> list[DagUnit]:
    """The series the nightly DAG has task chains for, read from the config file (`path`, else
    OMNI_NIGHTLY_CONFIG) when the DAG file is parsed: an Airflow task's queue and pool are fixed
    when it is defined, so series and their lanes are the DAG's shape. Anything unreadable here
    is one default unit; the run itself then fails naming the problem."""
    default = [DagUnit("", None, DEFAULT_LANE, DEFAULT_LANES[DEFAULT_LANE])]
    path = path or os.environ.get(ENV)
    try:
        doc: Doc = parse(*_read(Path(path), ENV)) if path else {"version": 1}
        if doc["version"] == 1:
            return [dataclasses.replace(default[0], concurrency=bool(doc.get("concurrency")))]
        lanes = _lanes(path or ENV, doc.get("lanes"))
        units: list[DagUnit] = []
        for config in _fleet_series(path or ENV, doc):
            lane = str(config.get("lane") or DEFAULT_LANE)
            model = str(_section(config, "server").get("model") or DEFAULT_MODEL)
            series = Series(str(config.get("benchmark") or get_settings().benchmark), model, lane)
            checked = bool(config.get("concurrency"))
            same = [i for i, u in enumerate(units) if u.key == series.key]
            if same and checked:  # a variant of a listed series asks for the check
                units[same[0]] = dataclasses.replace(units[same[0]], concurrency=True)
            if lane not in lanes or same:
                continue  # a variant of a listed series is decided in its unit
            units.append(DagUnit(unit_suffix(series), series.key, lane, lanes[lane], checked))
        return units or default
    except ConfigError:
        return default


def unit_suffix(series: Series) -> str:
    """A series as a task-id suffix: `seed_tts_zh.MiniCPM-o-4_5.rocm-mi300`, or the benchmark
    alone for the default model and lane."""
    if series.is_default:
        return series.benchmark
    model = series.model.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{series.benchmark}.{model}.{series.lane}")[:200]


def _check_choices(choices: Any, where: str) -> None:
    if choices is None:
        return
    if not isinstance(choices, dict) or not all(isinstance(v, list) for v in choices.values()):
        raise ConfigError(f"{where}: form_choices: a mapping of field → list of values")
    for key in choices:
        if key not in CHOICE_KEYS:
            raise ConfigError(
                f"{where}: form_choices.{key}: only {_names(CHOICE_KEYS)} are offered this way "
                "(other fields are the config's alone)"
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
            if strategy == "image" and "{commit}" not in str(p.environment.get("image", "")):
                fail(
                    "environment.image",
                    "the image strategy needs the image reference, with {commit} for the SHA "
                    '(e.g. "registry/vllm-omni:{commit}")',
                )
        elif not url.startswith(("http://", "https://")):
            fail(
                f"targets.{branch}", f"{url!r} is not http(s)://…, simulator:PROFILE or vllm-serve"
            )
    if p.baseline not in p.branches:
        fail("baseline", f"{p.baseline!r} is not one of the branches ({_names(p.branches)})")
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    if p.benchmark is not None and p.benchmark not in runnable:
        fail("benchmark", f"unknown benchmark {p.benchmark!r} (known: {_names(runnable)})")
    if not p.seeds:
        fail("seeds", "at least one seed")
    why = benchmarks.get(p.bench).check_dataset(p.dataset)
    if why is not None:
        fail("dataset", why)
    for branch in p.targets:
        deploy = p.target_deploy_config(branch)
        if deploy is not None and not Path(deploy).is_file():
            fail(f"targets.{branch}.deploy_config", f"{deploy} does not exist")
    if p.auto_bisect.enabled and not p.repo:
        fail("auto_bisect.enabled", "auto-bisect lists the commits of a range: set repo")
    if benchmarks.get(p.bench).graded_by_asr(p.options):
        try:
            GraderSpec.from_params(p.grader).resolved()
        except TypeError as exc:
            fail("grader", str(exc).replace("GraderSpec.__init__() ", ""))
        except GraderConfigError as exc:
            fail("grader", str(exc))


def _names(values: Any) -> str:
    return ", ".join(str(v) for v in values) or "none"


class ABConfig(BaseModel):
    """The config's `ab:` section: which repositories may start an on-demand A/B and how
    much one may spend; the series are the config's own."""

    model_config = ConfigDict(extra="forbid")
    repos: list[str] = Field(min_length=1)
    series: str | None = Field(default=None, description="The series a webhook trigger runs")
    budget: int = Field(default=6000, gt=0, description="Clips an A/B spends unless asked")
    max_budget: int = Field(default=20000, gt=0)
    allow_forks: bool = Field(
        default=False,
        description="Accept the label on a fork's PR (then the maintainer's label is the trust "
        "decision: the fork's head is built and served on the GPU worker)",
    )


def ab_allows_forks(variable: str | None = None) -> bool:
    """Whether the config's `ab:` section accepts PRs from forks (false without one)."""
    found = source(variable)
    doc = None if found is None else parse(*found)
    ab = _section(doc or {}, "ab")
    return doc is not None and doc["version"] == 2 and ab.get("allow_forks") is True


def resolve_ab(form: Doc, variable: str | None = None) -> Any:
    """An A/B request from a trigger form (repo, pr, base_sha, head_sha, series, budget),
    checked against the config: only its `ab.repos`, only its series (base on the series'
    baseline target, head on its other branch's), at most `ab.max_budget` clips."""
    from omni_tasks.ab.checks import check_repo
    from omni_tasks.jobs.ab import ABError, ABRequest

    found = source(variable)
    doc = None if found is None else parse(*found)
    if found is None or doc is None or doc["version"] != 2 or not doc.get("ab"):
        raise ConfigError("the deployment config has no `ab:` section: no A/B is allowed")
    where = found[0]
    try:
        ab = ABConfig.model_validate(doc["ab"])
        for allowed in ab.repos:
            check_repo(allowed)
    except (ValidationError, TypeError, ValueError) as exc:
        detail = _first(exc) if isinstance(exc, ValidationError) else str(exc)
        raise ConfigError(f"{where}: ab: {detail}") from None
    repo = form.get("repo")
    if repo not in ab.repos:
        raise ConfigError(f"trigger form: repo {str(repo)[:100]!r} is not one of ab.repos")
    night = _fleet_night(where, doc, {})
    key = form.get("series") or ab.series
    mine = [p for p in night.series if p.series.key == key and p.variant == "default"]
    if not mine:
        keys = ", ".join(p.series.key for p in night.series)
        raise ConfigError(f"trigger form: series {str(key)[:200]!r} is not in the config ({keys})")
    p = mine[0]
    heads = [b for b in p.branches if b != p.baseline]
    if not heads or p.baseline not in p.targets or heads[0] not in p.targets:
        raise ConfigError(f"{where}: {p.series.label}: an A/B needs a baseline and a second target")
    budget = form.get("budget") or ab.budget
    if not isinstance(budget, int) or isinstance(budget, bool) or not 0 < budget <= ab.max_budget:
        raise ConfigError(f"trigger form: budget: 1 to {ab.max_budget} clips")
    pr = form.get("pr")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool)):
        raise ConfigError("trigger form: pr: a positive pull request number")
    # Every field's shape, and no other field: forms.FIELDS["ab"], as the DAG's Params hold it.
    found = forms.schema_problem(forms.closed(forms.FIELDS["ab"], "not A/B fields"), form, "")
    if found is not None:
        raise ConfigError("trigger form: {}: {}".format(*found))
    try:
        return ABRequest(
            benchmark=p.bench,
            model=p.series.model,
            lane=p.lane,
            base_target=p.target_url(p.baseline),
            head_target=p.target_url(heads[0]),
            base_sha=str(form.get("base_sha") or ""),
            head_sha=str(form.get("head_sha") or ""),
            repo=repo,
            pr=pr,
            budget=budget,
            dataset=p.dataset,
            limit=p.limit,
            options=p.options,
            grader=p.grader,
            serving=p,
        )
    except ABError as exc:
        raise ConfigError(f"trigger form: {exc}") from None


class BuildkiteSync(BaseModel):
    """The config's `buildkite:` section: the pipelines the hourly sync imports."""

    model_config = ConfigDict(extra="forbid")
    org: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")
    pipelines: list[str] = Field(min_length=1)
    base_url: str = Field(default="https://api.buildkite.com/v2", pattern=r"^https?://\S+$")
    rules: str | None = Field(default=None, description="An artifact rules file (trusted)")
    lookback_days: int = Field(default=2, ge=1, le=400)
    artifact_hosts: list[str] = Field(
        default_factory=lambda: ["buildkiteartifacts.com", "s3.amazonaws.com"],
        description="Hosts (and their subdomains) artifact downloads may be fetched from, "
        "beside the API's own; a host listed by name may be a private address",
    )
    download_deadline_s: float = Field(default=300.0, gt=0, le=3600)
    upstream_checkout: str | None = Field(
        default=None,
        description="A git checkout of vllm-omni on the worker (trusted): gate thresholds "
        "are read from its test files at each build's commit",
    )


def buildkite_sync(variable: str | None = None) -> BuildkiteSync:
    """The `buildkite:` section of the deployment config (version 2)."""
    found = source(variable)
    doc = None if found is None else parse(*found)
    if found is None or doc is None or doc["version"] != 2 or not doc.get("buildkite"):
        raise ConfigError("the deployment config has no `buildkite:` section: nothing to sync")
    try:
        return BuildkiteSync.model_validate(doc["buildkite"])
    except (ValidationError, TypeError) as exc:
        detail = _first(exc) if isinstance(exc, ValidationError) else str(exc)
        raise ConfigError(f"{found[0]}: buildkite: {detail}") from None
