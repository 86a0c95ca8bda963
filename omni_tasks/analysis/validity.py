"""Is an imported night a valid measurement of its series? A run can be silently invalid: fewer
items judged than the suite asks, a gated figure that was never computed (upstream's
validators skip a None, so its gate "passes" by judging nothing), or a judge protocol other
than the series'. Each problem is a sentence; none means valid."""

from __future__ import annotations

from collections.abc import Sequence

from omni_tasks.contracts import JsonObject
from omni_tasks.records import RunSpec


def run_validity(
    spec: RunSpec,
    verdicts: Sequence[JsonObject],
    *,
    expected_items: int | None = None,
    protocol_pin: str | None = None,
    switches: dict[str, str] | None = None,
) -> list[str]:
    """The run's validity problems: `verdicts` are upstream's gate verdicts on it,
    `expected_items` the suite's item count, `protocol_pin` the series' pin and `switches`
    the harness's eval switches its CI step set (each when known)."""
    problems = []
    if expected_items is not None and spec.n_expected < expected_items:
        problems.append(
            f"short night: {spec.n_expected} of the suite's {expected_items} items evaluated"
        )
    elif expected_items is not None and spec.n_expected != expected_items:
        problems.append(f"{spec.n_expected} items evaluated, the suite has {expected_items}")
    for v in verdicts:
        if v["verdict"] == "not_evaluated":
            why = ""
            if switches is not None and "_sim_" in str(v["figure"]) and not _on(switches, "SIM"):
                why = "; the step did not switch SIM on (SEED_TTS_SIM_EVAL)"
            problems.append(
                f"gate not evaluated: {v['gate']} ({v['figure']} was not computed, so "
                f"upstream's test skipped it{why})"
            )
    pin = (spec.summary or {}).get("protocol_pin")
    if protocol_pin is not None and pin != protocol_pin:
        problems.append(
            f"protocol pin {str(pin)[:12]} is not the series' {protocol_pin[:12]}: judged by "
            "another evaluator version"
        )
    return problems


def _on(switches: dict[str, str], kind: str) -> bool:
    return any(kind in k and v.lower() in ("1", "true", "yes", "on") for k, v in switches.items())
