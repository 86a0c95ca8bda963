"""A one-series form's parameters (a bisect's, an ablation's, a regrade's grader): the form
chooses a configured series (by benchmark, lane and model) and among what it offers; what
runs on the worker (repo, environment, server, overrides, grader) is the config's."""

from __future__ import annotations

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import MissingCapability
from omni_tasks.config import get_settings
from omni_tasks.deployment.night import check_choices, check_form, form_fields
from omni_tasks.deployment.reading import (
    MERGED,
    OFFERS,
    ConfigError,
    Doc,
    fleet_series,
    merged,
    read,
    section,
)

SERVING = ("repo", "environment", "server", "overrides", "grader")
# Which branch each target field of a one-series form serves.
TARGET_BRANCH = {
    "bisect": {"target": ("branch", "rebase")},
    "ablate": {"candidate_target": ("branch", "rebase"), "baseline_target": ("baseline", "main")},
}


def series_config(
    variable: str | None,
    benchmark: str | None = None,
    lane: str | None = None,
    model: str | None = None,
) -> Doc:
    """The configured series a one-series form runs on ({} when nothing is configured): the
    series of that benchmark (and lane, and model), else the first; with the config's
    form_choices and named_overrides."""
    found = read(variable)
    if found is None:
        return {}
    where, doc = found
    check_choices(doc, where)
    series = fleet_series(where, doc)
    for config in series:
        if (
            (benchmark is None or config.get("benchmark") == benchmark)
            and (lane in (None, "default") or config.get("lane") == lane)
            and (model is None or section(config, "server").get("model") == model)
        ):
            break
    else:
        config = series[0]
    return {**config, **{k: doc[k] for k in OFFERS if k in doc}}


def one_series_form(kind: str, form: Doc, variable: str | None) -> Doc:
    """A bisect's or an ablation's parameters: the form's given fields through their
    allow-list, over the serving fields of the configured series they name (by benchmark,
    lane and model). What runs on the worker is the config's; the form only chooses."""
    given = form_fields(form)
    config = series_config(
        variable,
        _text(given.get("benchmark")),
        _text(given.get("lane")),
        _text(section(given, "server").get("model")),
    )
    require_capability(kind, _text(given.get("benchmark") or config.get("benchmark")))
    return {
        **config_defaults(kind, given, config),
        **with_serving(check_form(kind, given, config), config),
    }


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def require_capability(kind: str, benchmark: str | None) -> None:
    """A bisect or an ablation of a family that cannot do it is refused with the form, naming
    the benchmark and what its family lacks (never on a GPU task)."""
    doing = {"bisect": "bisected", "ablate": "ablated"}.get(kind)
    if doing is None:
        return
    try:
        benchmarks.get(benchmark or get_settings().benchmark).require(kind, doing)
    except (MissingCapability, benchmarks.UnknownBenchmark) as exc:
        raise ConfigError(f"benchmark: {exc}") from None


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

    serving = {k: config[k] for k in SERVING if config.get(k) not in (None, {}, "")}
    out = merged(serving, form, (*MERGED, "grader"))
    ours, theirs = serving.get("overrides"), form.get("overrides")
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out["overrides"] = merge_deploy(ours, theirs, new_stages=True)
    return out
