"""Upstream's fixed gates as data (`upstream_gates.yaml`): which figure a series' upstream
test asserts on over which protocol, which way, and the threshold's dated history (each entry
`since` a night, `until` one where it ended, and the vllm-omni PR that set it), so that
`gates_on(series, night)` answers what upstream's test asserted that night without a
checkout. A deployment config's series may replace its gates (`upstream_gate:`), or say it
has none (`upstream_gate: none`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from omni_tasks.contracts import JsonObject
from omni_tasks.series import Series

TABLE = Path(__file__).resolve().parent / "upstream_gates.yaml"
Comparator = Literal["<=", ">="]
Verdict = Literal["pass", "fail", "not_evaluated"]
CHAT = "chat"  # the protocol of a gate that names none
_PROTOCOL = re.compile(r"[a-z][a-z0-9-]{0,39}")


class GateTableError(ValueError):
    """A gate entry that cannot be used; the message names it."""


@dataclass(frozen=True)
class Threshold:
    """One threshold a gate has had: in force from `since` (None: from the start of the
    series' history) to the night before `until` (None: until the next entry, or still)."""

    value: float
    since: dt.date | None = None
    source: str = ""
    until: dt.date | None = None
    pr: int | None = None  # the vllm-omni PR that set it

    def in_force(self, day: dt.date) -> bool:
        return (self.since is None or self.since <= day) and (
            self.until is None or day < self.until
        )

    def to_json(self) -> JsonObject:
        """The entry as a stored verdict names it (which gate, value and PR, it used)."""
        return {
            "value": self.value,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "pr": self.pr,
            "source": self.source,
        }


@dataclass(frozen=True)
class UpstreamGate:
    benchmark: str
    model: str
    figure: str  # an upstream summary figure, e.g. seed_tts_content_error_mean
    comparator: Comparator  # the figure must stay on this side of the threshold
    history: tuple[Threshold, ...]
    constant: str | None = None  # the test file's name for the threshold
    test_file: str | None = None  # where upstream defines `constant` (path in vllm-omni)
    protocol: str = CHAT  # how the gated step's harness talks to the server

    @property
    def threshold(self) -> float:
        return self.history[-1].value

    def entry_on(self, day: dt.date) -> Threshold | None:
        """The history entry in force on `day`: the latest that started by then, unless it
        ended (`until`) on or before it; None before the first one or after the gate ended."""
        current = None
        for t in self.history:
            if t.since is None or t.since <= day:
                current = t
        return current if current is not None and current.in_force(day) else None

    def threshold_on(self, day: dt.date) -> float | None:
        """The threshold in force on `day` (None when upstream had no such gate then)."""
        entry = self.entry_on(day)
        return None if entry is None else entry.value

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
        return dataclasses.replace(
            self,
            history=(*self.history, Threshold(value, None, "given on the command line")),
            test_file=None,  # a threshold given by hand is not read back from upstream
        )


def parse_gate(raw: Any, where: str) -> UpstreamGate:
    if not isinstance(raw, dict):
        raise GateTableError(f"{where}: must be a mapping")
    unknown = set(raw) - set(UpstreamGate.__dataclass_fields__)
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
    thresholds = [_parse_threshold(h, f"{where}: history[{i}]") for i, h in enumerate(history)]
    dated = [t.since for t in thresholds if t.since is not None]
    if dated != sorted(dated):
        raise GateTableError(f"{where}: history must be oldest first")
    for i, (t, nxt) in enumerate(itertools.pairwise(thresholds)):
        if t.until is not None and nxt.since is not None and nxt.since < t.until:
            raise GateTableError(f"{where}: history[{i}].until is past the next entry's since")
    protocol = raw.get("protocol", CHAT)
    if not (isinstance(protocol, str) and _PROTOCOL.fullmatch(protocol)):
        raise GateTableError(f"{where}: protocol must be a lower-case name such as 'chat'")
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
    return UpstreamGate(**{**raw, "history": tuple(thresholds)})


_ENTRY_FIELDS = {"threshold", "since", "until", "pr", "source"}


def _parse_threshold(h: Any, where: str) -> Threshold:
    if not isinstance(h, dict):
        raise GateTableError(f"{where}: must be a mapping")
    unknown = set(h) - _ENTRY_FIELDS
    if unknown:
        raise GateTableError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    value = h.get("threshold")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GateTableError(f"{where}.threshold must be a finite number")
    since, until = h.get("since"), h.get("until")
    for name, day in (("since", since), ("until", until)):
        if day is not None and not (isinstance(day, dt.date) and not isinstance(day, dt.datetime)):
            raise GateTableError(f"{where}.{name} must be a date (YYYY-MM-DD)")
    if until is not None and (since is None or until <= since):
        raise GateTableError(f"{where}.until must come after its since")
    pr = h.get("pr")
    if pr is not None and (isinstance(pr, bool) or not isinstance(pr, int) or pr <= 0):
        raise GateTableError(f"{where}.pr must be a vllm-omni PR number")
    return Threshold(float(value), since, str(h.get("source") or "").strip(), until, pr)


def load_table(path: Path = TABLE) -> list[UpstreamGate]:
    return list(_table(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _table(path: Path, mtime_ns: int) -> tuple[UpstreamGate, ...]:
    """The parsed table, once per file version: a fleet sync judges every artifact by it."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise GateTableError(f"{path}: must be a version: 1 gate table")
    gates = tuple(
        parse_gate(g, f"{path}: gates[{i}]") for i, g in enumerate(doc.get("gates") or [])
    )
    seen: set[tuple[str, str, str, str]] = set()
    for i, g in enumerate(gates):
        key = (g.benchmark, g.model, g.protocol, g.figure)
        if key in seen:
            raise GateTableError(f"{path}: gates[{i}]: a second gate for {' · '.join(key)}")
        seen.add(key)
    return gates


def gates_of(
    series: Series, configured: list[UpstreamGate] | None = None, protocol: str = CHAT
) -> list[UpstreamGate]:
    """The series' upstream gates over `protocol`: the config's when it gives them (an empty
    list: none), else the table's for its benchmark, model and protocol."""
    if configured is not None:
        return configured
    key = (series.benchmark, series.model, protocol)
    return [g for g in load_table() if (g.benchmark, g.model, g.protocol) == key]


def gates_on(
    series: Series,
    night: dt.date,
    protocol: str = CHAT,
) -> list[tuple[UpstreamGate, Threshold]]:
    """Each of the series' gates that upstream's test asserted on `night` over `protocol`,
    with the history entry in force (value, since, until, PR); a gate not yet set, or ended,
    that night is left out: upstream asserted nothing for it."""
    return [
        (gate, entry)
        for gate in gates_of(series, None, protocol)
        if (entry := gate.entry_on(night)) is not None
    ]
