"""Upstream's fixed gates as data (`upstream_gates.yaml`): which figure a series' upstream
test asserts on, which way, and the threshold's history. A deployment config's series may
replace its gates (`upstream_gate:`), or say it has none (`upstream_gate: none`)."""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from omni_tasks.series import Series

TABLE = Path(__file__).resolve().parent / "upstream_gates.yaml"
Comparator = Literal["<=", ">="]
Verdict = Literal["pass", "fail", "not_evaluated"]


class GateTableError(ValueError):
    """A gate entry that cannot be used; the message names it."""


@dataclass(frozen=True)
class Threshold:
    value: float
    since: dt.date | None = None  # None: from the start of the series' history
    source: str = ""


@dataclass(frozen=True)
class UpstreamGate:
    benchmark: str
    model: str
    figure: str  # an upstream summary figure, e.g. seed_tts_content_error_mean
    comparator: Comparator  # the figure must stay on this side of the threshold
    history: tuple[Threshold, ...]
    constant: str | None = None  # the test file's name for the threshold
    test_file: str | None = None  # where upstream defines `constant` (path in vllm-omni)

    @property
    def threshold(self) -> float:
        return self.history[-1].value

    def threshold_on(self, day: dt.date) -> float | None:
        """The threshold in force on `day` (None before the first one with a date)."""
        current = None
        for t in self.history:
            if t.since is None or t.since <= day:
                current = t.value
        return current

    def verdict(self, value: float | None, threshold: float | None = None) -> Verdict:
        """Upstream's verdict: strictly past the threshold fails; no figure is no verdict."""
        limit = self.threshold if threshold is None else threshold
        if value is None or not math.isfinite(value):
            return "not_evaluated"
        failed = value > limit if self.comparator == "<=" else value < limit
        return "fail" if failed else "pass"

    def describe(self, threshold: float | None = None) -> str:
        limit = self.threshold if threshold is None else threshold
        return f"{self.figure} {self.comparator} {limit:g}"

    def with_threshold(self, value: float) -> UpstreamGate:
        return UpstreamGate(
            self.benchmark,
            self.model,
            self.figure,
            self.comparator,
            (*self.history, Threshold(value, None, "given on the command line")),
            self.constant,
        )  # no test_file: a threshold given by hand is not read back from upstream


def parse_gate(raw: Any, where: str) -> UpstreamGate:
    if not isinstance(raw, dict):
        raise GateTableError(f"{where}: must be a mapping")
    unknown = set(raw) - {
        "benchmark",
        "model",
        "figure",
        "comparator",
        "history",
        "constant",
        "test_file",
    }
    if unknown:
        raise GateTableError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for name in ("benchmark", "model", "figure"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise GateTableError(f"{where}: {name!r} must be a non-empty string")
    if raw.get("comparator") not in ("<=", ">="):
        raise GateTableError(f"{where}: comparator must be '<=' or '>='")
    history = raw.get("history")
    if not isinstance(history, list) or not history:
        raise GateTableError(f"{where}: 'history' must list at least one threshold")
    thresholds = []
    for i, h in enumerate(history):
        value = h.get("threshold") if isinstance(h, dict) else None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise GateTableError(f"{where}: history[{i}].threshold must be a finite number")
        since = h.get("since")
        if since is not None and not isinstance(since, dt.date):
            raise GateTableError(f"{where}: history[{i}].since must be a date (YYYY-MM-DD)")
        thresholds.append(Threshold(float(value), since, str(h.get("source") or "")))
    dated = [t.since for t in thresholds if t.since is not None]
    if dated != sorted(dated):
        raise GateTableError(f"{where}: history must be oldest first")
    constant = raw.get("constant")
    if constant is not None and not (isinstance(constant, str) and constant.isidentifier()):
        raise GateTableError(f"{where}: constant must be a Python name")
    test_file = raw.get("test_file")
    if test_file is not None and not (
        isinstance(test_file, str)
        and test_file.endswith(".py")
        and not test_file.startswith("/")
        and ".." not in test_file.split("/")
    ):
        raise GateTableError(f"{where}: test_file must be a .py path inside vllm-omni")
    if test_file is not None and constant is None:
        raise GateTableError(f"{where}: test_file needs the constant it defines")
    return UpstreamGate(
        raw["benchmark"],
        raw["model"],
        raw["figure"],
        raw["comparator"],
        tuple(thresholds),
        constant,
        test_file,
    )


def load_table(path: Path = TABLE) -> list[UpstreamGate]:
    return list(_table(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _table(path: Path, mtime_ns: int) -> tuple[UpstreamGate, ...]:
    """The parsed table, once per file version: a fleet sync judges every artifact by it."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise GateTableError(f"{path}: must be a version: 1 gate table")
    return tuple(parse_gate(g, f"{path}: gates[{i}]") for i, g in enumerate(doc.get("gates") or []))


def gates_of(series: Series, configured: list[UpstreamGate] | None = None) -> list[UpstreamGate]:
    """The series' upstream gates: the config's when it gives them (an empty list: none),
    else the table's for its benchmark and model."""
    if configured is not None:
        return configured
    return [g for g in load_table() if (g.benchmark, g.model) == (series.benchmark, series.model)]
