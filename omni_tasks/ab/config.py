"""The deployment config's `ab:` section: which repositories may start an on-demand A/B, on
which of the config's series, and how much one may spend; and an A/B form checked against it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omni_tasks.ab.checks import check_repo
from omni_tasks.ab.request import ABError, ABRequest
from omni_tasks.deployment import forms
from omni_tasks.deployment.night import resolve_night
from omni_tasks.deployment.reading import ConfigError, Doc, config_section, read, section


class ABConfig(BaseModel):
    """The config's `ab:` section; the series are the config's own."""

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

    @field_validator("repos")
    @classmethod
    def _repos(cls, repos: list[str]) -> list[str]:
        for repo in repos:
            check_repo(repo)
        return repos


def ab_allows_forks(variable: str | None = None) -> bool:
    """Whether the config's `ab:` section accepts PRs from forks (false without one)."""
    found = read(variable)
    return found is not None and section(found[1], "ab").get("allow_forks") is True


def resolve_ab(form: Doc, variable: str | None = None) -> ABRequest:
    """An A/B request from a trigger form (repo, pr, base_sha, head_sha, series, budget),
    checked against the config: only its `ab.repos`, only its series (base on the series'
    baseline target, head on its other branch's), at most `ab.max_budget` clips."""
    found = read(variable)
    ab = config_section(found, "ab", ABConfig, missing="no A/B is allowed")
    repo = form.get("repo")
    if repo not in ab.repos:
        raise ConfigError(f"trigger form: repo {str(repo)[:100]!r} is not one of ab.repos")
    night = resolve_night({}, variable)
    key = form.get("series") or ab.series
    mine = [p for p in night.series if p.series.key == key and p.variant == "default"]
    if not mine:
        keys = ", ".join(p.series.key for p in night.series)
        raise ConfigError(f"trigger form: series {str(key)[:200]!r} is not in the config ({keys})")
    p = mine[0]
    heads = [b for b in p.branches if b != p.baseline]
    if not heads or p.baseline not in p.targets or heads[0] not in p.targets:
        where = found[0] if found else "config"
        raise ConfigError(f"{where}: {p.series.label}: an A/B needs a baseline and a second target")
    budget = form.get("budget") or ab.budget
    if not isinstance(budget, int) or isinstance(budget, bool) or not 0 < budget <= ab.max_budget:
        raise ConfigError(f"trigger form: budget: 1 to {ab.max_budget} clips")
    pr = form.get("pr")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool)):
        raise ConfigError("trigger form: pr: a positive pull request number")
    # Every field's shape, and no other field: forms.FIELDS["ab"], as the DAG's Params hold it.
    problem = forms.schema_problem(forms.closed(forms.FIELDS["ab"], "not A/B fields"), form, "")
    if problem is not None:
        raise ConfigError("trigger form: {}: {}".format(*problem))
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
