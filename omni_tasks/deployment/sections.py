"""The config-wide sections of the deployment config: `retention:` (how long clip audio is
kept), `slack_actions:` (who may use the alerts' buttons), `buildkite:` (the pipelines the
hourly Buildkite sync imports) and `ledger_digest:` (the series whose standing failures are
posted to Slack weekly)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from omni_tasks.deployment.reading import config_section, read
from omni_tasks.series import Series
from omni_tasks.trust.names import check_branch

SlackId = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,24}$")]


class Retention(BaseModel):
    model_config = ConfigDict(extra="forbid")
    audio_days: int = Field(default=90, ge=1, le=3650)


def retention(variable: str | None = None) -> Retention:
    """The configured retention (the defaults without a config or a `retention:` section)."""
    return config_section(read(variable), "retention", Retention)


class SlackActions(BaseModel):
    """Who may use the alerts' Acknowledge and Ignore buttons (alerts/interactions.py). A click
    is taken only from a Slack user id in `users` (when listed) made in a channel id in
    `channels` (when listed); with neither listed, or no section, every click is refused."""

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
    return config_section(read(variable), "slack_actions", SlackActions)


class BuildkiteSync(BaseModel):
    model_config = ConfigDict(extra="forbid")
    org: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")
    pipelines: list[str] = Field(min_length=1)  # slugs, or the rules' roles (cuda, amd, npu)
    # A role's slug where it is not the rules file's (AMD's pipeline, vllm-omni#6978, has a slug
    # nobody here verified: `{amd: SLUG}`); the role's rules and `pipelines` entry follow it.
    slugs: dict[str, str] = Field(default_factory=dict, max_length=50)
    base_url: str = Field(default="https://api.buildkite.com/v2", pattern=r"^https?://\S+$")
    rules: str | None = None  # an artifact rules file (trusted)
    lookback_days: int = Field(default=2, ge=1, le=400)
    # Hosts (and their subdomains) artifact downloads may be fetched from, beside the API's
    # own; a host listed by name may be a private address.
    artifact_hosts: list[str] = ["buildkiteartifacts.com", "s3.amazonaws.com"]
    download_deadline_s: float = Field(default=300.0, gt=0, le=3600)
    # A git checkout of vllm-omni on the worker (trusted): gate thresholds are read from its
    # test files at each build's commit.
    upstream_checkout: str | None = None


def buildkite_sync(variable: str | None = None) -> BuildkiteSync:
    """The `buildkite:` section of the deployment config (version 2)."""
    return config_section(read(variable), "buildkite", BuildkiteSync, missing="nothing to sync")


class LedgerDigest(BaseModel):
    """The weekly standing-failures digest (jobs/ledger_digest.py), opt-in per series: each
    listed series (`BENCHMARK|MODEL|LANE`) gets one Slack message a week; none listed, none."""

    model_config = ConfigDict(extra="forbid")
    series: list[str] = Field(default_factory=list, max_length=200)
    branch: str = "main"
    nights: int = Field(default=28, ge=7, le=400)  # the ledger's window

    @field_validator("series")
    @classmethod
    def _series_keys(cls, keys: list[str]) -> list[str]:
        for key in keys:
            Series.parse(key)
        return keys

    @field_validator("branch")
    @classmethod
    def _branch(cls, branch: str) -> str:
        return check_branch(branch)

    def opted_in(self) -> list[Series]:
        return [Series.parse(k) for k in self.series]


def ledger_digest(variable: str | None = None) -> LedgerDigest:
    """The configured `ledger_digest:` (no series, no digest, without one)."""
    return config_section(read(variable), "ledger_digest", LedgerDigest)
