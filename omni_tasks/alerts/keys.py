"""Alert keys: the one spelling of each kind of alert's key (an alert is found, updated and
deduplicated by its key; message idempotency keys extend it)."""

from __future__ import annotations

METRIC = "tail_fraction"  # what a regression alert watches, at the policy's primary τ


def regression(benchmark: str, candidate: str, baseline: str, variant: str, tau: float) -> str:
    return "|".join([benchmark, candidate, baseline, variant, f"{METRIC}@{tau:g}"])


def regression_pattern(benchmark: str, candidate: str, baseline: str, variant: str) -> str:
    """A SQL LIKE pattern for the pair's regression keys at any τ (LIKE's own wildcards in
    names, e.g. `_` in a branch, are escaped)."""

    def literal(s: str) -> str:
        return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

    return "|".join(literal(s) for s in (benchmark, candidate, baseline, variant)) + f"|{METRIC}@%"


def infra(benchmark: str, candidate: str, baseline: str, variant: str) -> str:
    return "|".join([benchmark, candidate, baseline, variant, "infra"])


def freshness(benchmark: str, branch: str) -> str:
    return f"{benchmark}|{branch}|freshness"


def task_failure(benchmark: str, dag_id: str, task_id: str) -> str:
    return f"{benchmark}|task|{dag_id}.{task_id}"
