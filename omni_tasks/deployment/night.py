"""The fleet's night: its lanes (queue, pool, GPUs per server) and series, each a NightlyParams
(`resolve_night`, when a run starts), and the DAG's task chains per series with their GPU
placement (`dag_units`, when the DAG file is parsed).

A manual run's non-empty form fields override every series for that run, within the form's
allow-list (deployment/forms.py): a form chooses among what the config offers
(`form_choices`, `named_overrides`, its targets) and never names a process, package,
environment, resource or URL (docs/operators/security.md). Every error names its field; the
DAG turns it into a failure that is not retried. A scheduled run without a config fails: it
would otherwise benchmark nothing real.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omni_tasks.config import get_settings
from omni_tasks.deployment.checks import check_choices, check_complete, check_form, form_fields
from omni_tasks.deployment.reading import (
    ENV,
    MERGED,
    VARIABLE,
    ConfigError,
    Doc,
    as_fleet,
    field_errors,
    fleet_series,
    names,
    parse,
    read,
    read_file,
    section,
)
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.deployment.server import GPU_RESOURCE, ServerConfig
from omni_tasks.series import DEFAULT_LANE, Series

_SERVER = ServerConfig()  # a lane's servers default to the server config's


class Lane(BaseModel):
    """A hardware lane: where its GPU tasks are queued, the pool that bounds them, and how many
    GPUs (pool slots) one server takes."""

    model_config = ConfigDict(extra="forbid")
    queue: str = "gpu"
    pool: str = "gpu"
    gpus_per_server: int = Field(default=_SERVER.gpus, ge=1, le=64)
    gpu_resource: str = Field(default=_SERVER.gpu_resource, pattern=GPU_RESOURCE)
    # Airflow's execution_timeout for the lane's GPU tasks: above a series' own
    # gpu_task_timeout_s (6 h by default), so the task's deadline stops it first and cleanly.
    execution_timeout_s: float = Field(default=6.5 * 3600, gt=0, le=48 * 3600)

    @property
    def execution_timeout(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.execution_timeout_s)


# A lane names Airflow tasks (`run_branch__LANE`), queues and pools: a plain name.
_LANE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


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
    """The night's lanes and series (a version 1 config is one series on its lane), each its
    config's fields, then the form's given fields; a complete form needs no config."""
    found = read(variable)
    given = form_fields(form)
    if found is None and (scheduled or "targets" not in given):
        raise ConfigError(
            f"no deployment config: set the Airflow Variable {VARIABLE} (YAML or a path) or "
            f"{ENV} (a path){'' if scheduled else ', or give targets in the trigger form'}; "
            "see docs/operators/configure.md"
        )
    where, doc = found or ("trigger form", as_fleet({"version": 1}))
    check_choices(doc, where)
    lanes = _lanes(where, doc.get("lanes"))
    offers = {k: doc.get(k) for k in ("form_choices", "named_overrides")}
    out: list[NightlyParams] = []
    seen: set[tuple[str, str]] = set()
    for i, config in enumerate(fleet_series(where, doc)):
        at = where if doc["version"] == 1 else f"{where}: series[{i}]"
        name, server = config.get("lane"), config.setdefault("server", {})
        if not isinstance(name, str) or name not in lanes:
            raise ConfigError(f"{at}: lane: {name!r} is not one of the lanes ({names(lanes)})")
        if not isinstance(server, dict):
            raise ConfigError(f"{at}: server: a mapping of server fields")
        server.setdefault("gpus", lanes[name].gpus_per_server)
        server.setdefault("gpu_resource", lanes[name].gpu_resource)
        params = _series_params({**config, **offers}, given, at)
        ident = (params.series.key, params.variant)
        if ident in seen:
            raise ConfigError(
                f"{at}: {params.series.label} ({params.variant}) is listed twice: one series, "
                "one baseline"
            )
        seen.add(ident)
        out.append(params)
    return Night(lanes, out)


def _series_params(config: Doc, given: Doc, where: str) -> NightlyParams:
    """One series' parameters: its config, then the form's given fields (allow-list checked)."""
    given = check_form("nightly", given, config)
    config = {k: v for k, v in config.items() if k not in ("form_choices", "named_overrides")}
    merged = {**config, **given}
    for key in MERGED:
        ours, theirs = config.get(key), given.get(key)
        if isinstance(ours, dict) and isinstance(theirs, dict):
            merged[key] = {**ours, **theirs}
    try:
        params = NightlyParams.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {field_errors(exc)}") from None
    except ValueError as exc:  # a check of ours outside pydantic's field errors
        raise ConfigError(f"{where}: {exc}") from None
    check_complete(params, where)
    return params


def _lanes(where: str, raw: object) -> dict[str, Lane]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: lanes: a mapping of lane name → {{queue, pool, ...}}")
    out = {}
    for name, fields in raw.items():
        if not isinstance(name, str) or not _LANE_NAME.match(name):
            raise ConfigError(f"{where}: lanes: {str(name)[:60]!r} is not a lane name")
        try:
            out[name] = Lane.model_validate(fields or {})
        except ValidationError as exc:
            raise ConfigError(f"{where}: lanes.{name}: {field_errors(exc)}") from None
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
    default = DagUnit("", None, DEFAULT_LANE, Lane())
    path = path or os.environ.get(ENV)
    if not path:
        return [default]
    try:
        doc = as_fleet(parse(*read_file(Path(path), ENV)))
        lanes, series = _lanes(path, doc.get("lanes")), fleet_series(path, doc)
    except ConfigError:
        return [default]
    if doc["version"] == 1:
        return [dataclasses.replace(default, concurrency=bool(series[0].get("concurrency")))]
    units: list[DagUnit] = []
    for config in series:
        lane = str(config.get("lane") or DEFAULT_LANE)
        model = section(config, "server").get("model") or _SERVER.model
        s = Series(str(config.get("benchmark") or get_settings().benchmark), str(model), lane)
        checked = bool(config.get("concurrency"))
        same = [i for i, u in enumerate(units) if u.key == s.key]
        if same and checked:  # a variant of a listed series asks for the check
            units[same[0]] = dataclasses.replace(units[same[0]], concurrency=True)
        if lane not in lanes or same:
            continue  # a variant of a listed series is decided in its unit
        units.append(DagUnit(unit_suffix(s), s.key, lane, lanes[lane], checked))
    return units or [default]


def unit_suffix(series: Series) -> str:
    """A series as a task-id suffix: `seed_tts_zh.MiniCPM-o-4_5.rocm-mi300`, or the benchmark
    alone for the default model and lane."""
    if series.is_default:
        return series.benchmark
    model = series.model.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{series.benchmark}.{model}.{series.lane}")[:200]
