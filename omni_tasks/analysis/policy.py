"""The versioned gate policy: shipped YAML, overridable by file (OMNI_GATE_POLICY)."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class GatePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    primary_tau: float = Field(gt=0)
    report_taus: list[float] = []
    alpha: float = Field(gt=0, lt=1)
    min_effect: float = Field(ge=0)
    same_margin: float = Field(gt=0)
    power: float = Field(gt=0, lt=1)
    noise_psi: float | None = Field(default=None, ge=0, le=1)
    coverage_floor: float = Field(ge=0, le=1)
    confirm_p: float = Field(gt=0, lt=1)
    slo_tail: float = Field(gt=0, le=1)
    legacy_mean_max: float = Field(gt=0)

    @property
    def policy_version(self) -> str:
        blob = json.dumps(self.model_dump(), sort_keys=True)
        return f"{self.version}+{hashlib.sha256(blob.encode()).hexdigest()[:8]}"

    @property
    def taus(self) -> list[float]:
        return [self.primary_tau, *[t for t in self.report_taus if t != self.primary_tau]]


class PolicyError(ValueError):
    pass


def load_policy(path: Path | None = None) -> GatePolicy:
    if path is None:
        from omni_tasks.config import get_settings

        path = get_settings().gate_policy
    if path is None:
        text = resources.files("omni_tasks.analysis").joinpath("gate_policy.yaml").read_text()
        source = "built-in gate_policy.yaml"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError(f"{path}: cannot read gate policy: {exc.strerror}") from exc
        source = str(path)
    try:
        data: Any = yaml.safe_load(text)
        return GatePolicy.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise PolicyError(f"{source}: invalid gate policy: {exc}") from exc
