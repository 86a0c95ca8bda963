"""The config's `buildkite:` section: the pipelines the hourly Buildkite sync imports."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from omni_tasks.deployment.reading import config_section, read


class BuildkiteSync(BaseModel):
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
    return config_section(read(variable), "buildkite", BuildkiteSync, missing="nothing to sync")
