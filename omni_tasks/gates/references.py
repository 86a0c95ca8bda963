"""Accuracy references as TensorRT-LLM keeps them (tests/integration/defs/accuracy/references/
there): per suite, the hypothesis test's parameters (α, β, σ, n, which way is better), and per
model a list of entries, each the reference a healthy build measured under one spec; the first
entry whose spec matches is used, and none matching is an error, never a guess. Our spec is
the hardware SKU and the serving protocol, because a reference measured on one does not hold on
another: MiniCPM-o's Daily-Omni gate of 0.78, set on CUDA, failed 3 of 7 NPU nights
(vllm-omni#7657). A reference gives θ and the threshold by `design.mean_gate`; the file is
`references.yaml` here, or the one OMNI_GATE_REFERENCES names (a team's own measured values)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from omni_tasks.gates.design import MeanGate, mean_gate
from omni_tasks.series import PROTOCOLS
from omni_tasks.trust.names import InvalidName, check_model, check_name

TABLE = Path(__file__).resolve().parent / "references.yaml"
SUITE_KEYS = {"figure", "higher_is_better", "alpha", "beta", "sigma", "num_samples", "models"}
TEST_KEYS = ("alpha", "beta", "sigma", "num_samples")  # an entry may override the suite's
ENTRY_KEYS = {"sku", "protocol", "accuracy", "source", *TEST_KEYS}
DEFAULT_PROTOCOL = "chat"  # as upstream's harness speaks unless told otherwise


class ReferenceError(ValueError):
    """A references file that cannot be used; the message names the file and the entry."""


class NotRegistered(LookupError):
    """No entry for the asked spec; the message lists the specs that are registered."""


@dataclass(frozen=True)
class Reference:
    suite: str
    model: str
    sku: str
    protocol: str
    accuracy: float  # the figure's reference, on the figure's own scale (a fraction, a WER)
    figure: str
    higher_is_better: bool
    alpha: float
    beta: float
    sigma: float  # one item's standard deviation of the figure
    num_samples: int
    source: str

    @property
    def comparator(self) -> Literal[">=", "<="]:
        return ">=" if self.higher_is_better else "<="

    @property
    def spec(self) -> str:
        return f"{self.suite} · {self.model} · {self.sku} · {self.protocol}"

    def gate(self) -> MeanGate:
        return mean_gate(
            self.alpha, self.beta, self.sigma, self.num_samples, self.accuracy, self.comparator
        )


def load_references(path: Path = TABLE) -> list[Reference]:
    """Every entry of the file, checked against an allow-list of keys and types."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ReferenceError(f"{path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or set(doc) - {"version", "suites"}:
        raise ReferenceError(f"{path}: must be a mapping of version: 1 and suites")
    suites = doc.get("suites") or {}
    if not isinstance(suites, dict):
        raise ReferenceError(f"{path}: suites must be a mapping of suite → its test")
    out: list[Reference] = []
    for suite, test in suites.items():
        where = f"{path}: suites.{suite}"
        _name(suite, where, "suite")
        if not isinstance(test, dict) or set(test) - SUITE_KEYS:
            raise ReferenceError(f"{where}: a mapping of {', '.join(sorted(SUITE_KEYS))}")
        figure = test.get("figure")
        if not isinstance(figure, str) or not figure:
            raise ReferenceError(f"{where}.figure: the gated figure's name")
        if not isinstance(test.get("higher_is_better"), bool):
            raise ReferenceError(f"{where}.higher_is_better: true or false")
        for k in TEST_KEYS:  # the suite's own test, checked even before it has entries
            _param(k, test.get(k), f"{where}.{k}")
        models = test.get("models") or {}
        if not isinstance(models, dict):
            raise ReferenceError(f"{where}.models: a mapping of model → its entries")
        for model, entries in models.items():
            _name(model, f"{where}.models", "model")
            if not isinstance(entries, list):
                raise ReferenceError(f"{where}.models.{model}: a list of entries")
            for i, entry in enumerate(entries):
                out.append(_entry(entry, f"{where}.models.{model}[{i}]", suite, model, test))
    return out


def _entry(raw: Any, where: str, suite: str, model: str, test: dict[str, object]) -> Reference:
    if not isinstance(raw, dict) or set(raw) - ENTRY_KEYS:
        raise ReferenceError(f"{where}: a mapping of {', '.join(sorted(ENTRY_KEYS))}")
    sku = raw.get("sku")
    if not isinstance(sku, str) or not sku:
        raise ReferenceError(f"{where}.sku: the hardware the reference was measured on")
    _name(sku, where, "sku")
    protocol = raw.get("protocol", DEFAULT_PROTOCOL)
    if protocol not in PROTOCOLS:
        raise ReferenceError(f"{where}.protocol: one of {', '.join(PROTOCOLS)}")
    accuracy = raw.get("accuracy")
    if isinstance(accuracy, bool) or not isinstance(accuracy, int | float):
        raise ReferenceError(f"{where}.accuracy: a number")
    if not math.isfinite(accuracy):
        raise ReferenceError(f"{where}.accuracy: a finite number")
    source = raw.get("source")
    if not isinstance(source, str) or not source:
        raise ReferenceError(f"{where}.source: where the reference was measured")
    params = {k: _param(k, raw.get(k, test.get(k)), f"{where}.{k}") for k in TEST_KEYS}
    return Reference(
        suite=suite,
        model=model,
        sku=sku,
        protocol=protocol,
        accuracy=float(accuracy),
        figure=str(test["figure"]),  # both checked by the suite's reader
        higher_is_better=test["higher_is_better"] is True,
        alpha=params["alpha"],
        beta=params["beta"],
        sigma=params["sigma"],
        num_samples=int(params["num_samples"]),
        source=source,
    )


def _param(key: str, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ReferenceError(f"{where}: a number")
    ok = {
        "alpha": 0 < value < 1,
        "beta": 0 < value < 1,
        "sigma": value >= 0,
        "num_samples": isinstance(value, int) and value >= 1,
    }[key]
    if not ok:
        raise ReferenceError(
            f"{where}: {value!r} is out of range"
            + (" (an integer ≥ 1)" if key == "num_samples" else "")
        )
    return float(value)


def _name(value: Any, where: str, what: str) -> None:
    if not isinstance(value, str):
        raise ReferenceError(f"{where}: {what} {value!r} must be a string")
    try:
        if what == "model":
            check_model(value)
        else:
            check_name(value, what)
    except InvalidName as exc:
        raise ReferenceError(f"{where}: {exc}") from None


def reference_for(
    suite: str, model: str, sku: str, protocol: str = DEFAULT_PROTOCOL, path: Path = TABLE
) -> Reference:
    """The first entry registered for (suite, model, SKU, protocol); SKUs compare without case
    (`H100` is the agent's `h100`)."""
    mine = [r for r in load_references(path) if (r.suite, r.model) == (suite, model)]
    for r in mine:
        if r.sku.lower() == sku.lower() and r.protocol == protocol:
            return r
    registered = ", ".join(f"{r.sku}/{r.protocol}" for r in mine) or "none"
    raise NotRegistered(
        f"no reference for {suite} · {model} on {sku} over {protocol} in {path} "
        f"(registered for this suite and model: {registered})"
    )


def entry_yaml(
    suite: str,
    model: str,
    sku: str,
    protocol: str,
    figure: str,
    higher: bool,
    accuracy: float,
    gate: MeanGate,
    source: str,
) -> str:
    """A measured reference as it goes in the file: the suite's test (α, β, σ, n of `gate`)
    with the model's one entry, to merge under `suites:`."""
    test = {
        "figure": figure,
        "higher_is_better": higher,
        "alpha": float(f"{gate.alpha:.4g}"),
        "beta": float(f"{gate.beta:.4g}"),
        "sigma": float(f"{gate.sigma:.4g}"),
        "num_samples": gate.n,
        "models": {
            model: [
                {
                    "sku": sku,
                    "protocol": protocol,
                    "accuracy": float(f"{accuracy:.4g}"),
                    "source": source,
                }
            ]
        },
    }
    doc = {"suites": {suite: test}}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)
