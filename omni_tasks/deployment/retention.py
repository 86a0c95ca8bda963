"""The config's `retention:` section: how long clip audio is kept."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from omni_tasks.deployment.reading import config_section, read


class Retention(BaseModel):
    """The config's `retention:` section: how long clip audio is kept."""

    model_config = ConfigDict(extra="forbid")
    audio_days: int = Field(default=90, ge=1, le=3650)


def retention(variable: str | None = None) -> Retention:
    """The configured retention (the defaults without a config or a `retention:` section)."""
    return config_section(read(variable), "retention", Retention)
