"""The nightly gate's policy in force (the rule is analysis/gate.py; the rest of gates/ is
upstream's gates): the shipped `gate_policy.yaml`, or the file OMNI_GATE_POLICY names,
validated as analysis/policy.py's GatePolicy."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.config import get_settings


class PolicyError(ValueError):
    pass


def load_policy(path: Path | None = None) -> GatePolicy:
    if path is None:
        path = get_settings().gate_policy
    if path is None:
        text = resources.files("omni_tasks.gates").joinpath("gate_policy.yaml").read_text()
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
