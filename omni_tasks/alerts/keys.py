"""Alert keys: the one spelling of each kind of alert's key (an alert is found, updated and
deduplicated by its key; message idempotency keys extend it). A series' keys start with its
`Series.key` (`benchmark|model|lane`), so two lanes of one benchmark never share an alert."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omni_tasks.contracts import StoredDecision


def regression(series: str, candidate: str, baseline: str, variant: str, metric: str) -> str:
    """`metric` is what the alert watches, as `name@where` (Benchmark.gated_metric: e.g.
    `tail_fraction@0.5`, the share of clips above the primary τ; `wrong_answers@answer`)."""
    if "@" not in metric:
        raise ValueError(f"a regression key's metric is name@where, got {metric!r}")
    return "|".join([series, candidate, baseline, variant, metric])


def regression_pattern(series: str, candidate: str, baseline: str, variant: str) -> str:
    """A SQL LIKE pattern for the pair's regression keys, whatever metric and τ (LIKE's own
    wildcards in names, e.g. `_` in a branch, are escaped; an infra key has no `@`)."""

    def literal(s: str) -> str:
        return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

    return "|".join(literal(s) for s in (series, candidate, baseline, variant)) + "|%@%"


def of_regression(d: StoredDecision, tau: float) -> str:
    """A decision's regression key: what its benchmark gates at τ (Benchmark.gated_metric)."""
    from omni_tasks import benchmarks

    metric = benchmarks.get(d.benchmark).gated_metric(tau)
    return regression(d.series.key, d.candidate_branch, d.baseline_branch, d.variant, metric)


def of_infra(d: StoredDecision) -> str:
    return "|".join([d.series.key, d.candidate_branch, d.baseline_branch, d.variant, "infra"])


def group(candidate: str, baseline: str, first_bad_night: str) -> str:
    """An alert group: the candidate/baseline pair and the first bad night its range ends on
    (two groups of one pair never share it: their ranges would overlap and be one group)."""
    return "|".join(["group", candidate, baseline, first_bad_night])


def freshness(series: str, branch: str) -> str:
    return f"{series}|{branch}|freshness"


def task_failure(series: str, dag_id: str, run_id: str) -> str:
    """The failed Airflow tasks of one DAG run (a night), under the series they ran for (a
    fleet-wide task: the default series'): one alert per series and night, so one lane's
    failing server is never another series' alert, and its every failed try one thread."""
    return f"{series}|task|{dag_id}|{run_id}"


def short(key: str, width: int = 56) -> str:
    """A key as a person reads it in a narrow table (the id is what commands take; `--wide`
    shows the whole key): the model's name without its organisation, cut at 14 characters,
    `candidate>baseline`, the variant only when not the default, the metric by its first
    word; then the middle elided past `width` characters."""
    parts = key.split("|")
    if len(parts) >= 7:  # benchmark|model|lane|candidate|baseline|variant|metric
        bench, model, lane, cand, base, variant, metric = parts[:7]
        model = model.rsplit("/", 1)[-1]
        model = model if len(model) <= 14 else model[:13] + "…"
        parts = [bench, model, lane, f"{cand}>{base}"]
        parts += [variant] if variant != "default" else []
        parts += [metric.split("@", 1)[0].split("_", 1)[0]]  # tail, wrong, infra
    elif parts[0] == "group" and len(parts) == 4:
        parts = ["group", f"{parts[1]}>{parts[2]}", parts[3]]
    elif len(parts) > 2 and "/" in parts[1]:
        parts[1] = parts[1].rsplit("/", 1)[-1]
    text = "|".join(parts)
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[-(width - 1 - head) :]
