"""Published reference figures (`published.yaml`): a model's own reported number for a
benchmark, with its unit, protocol and source, and whether a series figure shares that
protocol. A reference line never joins a series of another protocol."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from omni_tasks.series import Series

TABLE = Path(__file__).resolve().parent / "published.yaml"


class PublishedError(ValueError):
    """A published-figures entry that cannot be used; the message names it."""


@dataclass(frozen=True)
class Published:
    benchmark: str
    model: str
    value: float
    unit: str
    protocol: str
    source: str
    comparable: str | None  # the series figure of the same protocol, if any

    @property
    def published_scale(self) -> float:
        """The value on the series figure's scale (a fraction where the unit is a percent)."""
        return round(self.value / 100, 12) if self.unit.startswith("%") else self.value


def load_published(path: Path = TABLE) -> list[Published]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise PublishedError(f"{path}: must be a version: 1 table")
    out = []
    for i, raw in enumerate(doc.get("figures") or []):
        where = f"{path}: figures[{i}]"
        if not isinstance(raw, dict) or set(raw) - {*Published.__dataclass_fields__}:
            raise PublishedError(
                f"{where}: a mapping of {', '.join(Published.__dataclass_fields__)}"
            )
        value = raw.get("value")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise PublishedError(f"{where}: value must be a finite number")
        for name in ("benchmark", "model", "unit", "protocol", "source"):
            if not isinstance(raw.get(name), str) or not raw[name]:
                raise PublishedError(f"{where}: {name} must be a non-empty string")
        comparable = raw.get("comparable")
        if comparable is not None and not isinstance(comparable, str):
            raise PublishedError(f"{where}: comparable must be a figure name or null")
        out.append(Published(**{**raw, "value": float(value), "comparable": comparable}))
    return out


def published_for(series: Series) -> list[Published]:
    return [
        p for p in load_published() if (p.benchmark, p.model) == (series.benchmark, series.model)
    ]
