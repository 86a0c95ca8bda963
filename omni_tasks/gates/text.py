"""Gate advice in words: the terminal's lines and a ready-to-paste PR description."""

from __future__ import annotations

import math

from omni_tasks.gates.advice import GateAdvice

METHOD = (
    "Each night with nothing changed is simulated by drawing every item's outcome from its own "
    "outcomes over the stored nights (a broken one's value from all broken items' values, with "
    "a tail fitted to the top runaways, so a runaway can recur on any item and exceed the "
    "largest seen) and taking upstream's figure over them; the intervals come from refitting "
    "with each night left out (the jackknife)."
)
METHOD_SUMMARY = (
    "Each night with nothing changed is drawn from a normal model of the stored nightly figures "
    "(no per-item rows exist); the intervals come from refitting with each night left out."
)


def rounded_threshold(value: float, comparator: str) -> float:
    """Three significant digits, rounded away from the figure's usual values (up for a
    ceiling, down for a floor), so the rounded line is no stricter than advised."""
    if value == 0 or not math.isfinite(value):
        return value
    step = 10 ** (math.floor(math.log10(abs(value))) - 2)
    scaled = value / step
    return (math.ceil(scaled - 1e-9) if comparator == "<=" else math.floor(scaled + 1e-9)) * step


def _num(x: float) -> str:
    return f"{x:.4g}"


def _pct(p: float) -> str:
    return f"{100 * p:.1f} %"


def _items(n: int | None, what: str) -> str:
    return f" (≈ {n} newly {what})" if n is not None else ""


def catches(comparator: str, figure: str, shift: float, items: int | None, what: str) -> str:
    """What a gate catches with 80 % power: a shift of its figure (and in items)."""
    if shift <= 0:
        return "nothing: it already fails on most nights with nothing changed"
    sign = "+" if comparator == "<=" else "−"
    return f"a shift of {sign}{_num(shift)} in {figure}{_items(items, what)} with 80 % power"


def lines(a: GateAdvice, what: str = "broken items") -> list[str]:
    lo, hi = a.p_fail_interval
    out = [
        f"gate {a.gate}: P(fail | no change) = {_pct(a.p_fail)} per night "
        f"[{_pct(lo)}, {_pct(hi)}], about {a.p_fail * 50:.1f} of 50 nights",
        f"  from {a.basis or f'{a.nights} nights'}; {a.method}",
        f"  median {a.figure} {_num(a.median_figure)}; it catches "
        + catches(a.comparator, a.figure, a.detectable_shift, a.detectable_items, what),
    ]
    if a.tail_mde is not None:
        out.append(
            f"  our paired tail test on the same history: Δ broken share {_pct(a.tail_mde)}"
            + _items(a.tail_mde_items, what)
        )
    h = a.history
    record = (
        f"  history: {h.failing} of {h.nights} nights failed; longest streak {h.longest_streak}, "
        f"current streak {h.current_streak}"
    )
    if h.never_passed:
        record += "; never passed under the current threshold"
    out.append(record)
    slo, shi = a.suggested_interval
    out.append(
        f"  suggested threshold for 1 in {round(1 / a.target_false_fail)} nights: "
        f"{a.comparator} {_num(rounded_threshold(a.suggested_threshold, a.comparator))} "
        f"[{_num(slo)}, {_num(shi)}]; it still catches "
        + catches(
            a.comparator, a.figure, a.suggested_detectable_shift, a.suggested_detectable_items, what
        )
    )
    d = a.design
    if d is not None and d.threshold is not None and a.design_p_fail is not None:
        if a.reference is not None:
            head, whence = f"registered reference {a.reference}", ""
        else:
            head = "as a TensorRT-LLM reference"
            whence = f" ({'one item' if d.n > 1 else 'the nightly figure'}, from history)"
        out.append(
            f"  {head}: α {_pct(d.alpha)}, β {_pct(d.beta)}, σ {_num(d.sigma)}{whence}, n {d.n} "
            f"→ θ {_num(d.theta)}, threshold {a.comparator} {_num(d.threshold)} (normal "
            f"approximation; by the model above it fails {_pct(a.design_p_fail)} of nights)"
        )
    out += [f"  note: {n}" for n in a.notes]
    return out


def pr_description(
    a: GateAdvice, series_label: str, constant: str | None, what: str = "broken items"
) -> str:
    """A PR description proposing the suggested threshold: the figures, the method in two
    sentences and the line for the test file."""
    lo, hi = a.p_fail_interval
    line = rounded_threshold(a.suggested_threshold, a.comparator)
    every = round(1 / a.target_false_fail)
    h = a.history
    now = catches(a.comparator, a.figure, a.detectable_shift, a.detectable_items, what)
    then = catches(
        a.comparator, a.figure, a.suggested_detectable_shift, a.suggested_detectable_items, what
    )
    rows = [
        "| | now | suggested |",
        "|---|---|---|",
        f"| threshold | `{a.comparator} {_num(a.threshold)}` | `{a.comparator} {_num(line)}` |",
        f"| false-fail chance per night (nothing changed) | {_pct(a.p_fail)} "
        f"[{_pct(lo)}, {_pct(hi)}] | {_pct(a.target_false_fail)} (1 in {every}) |",
        f"| catches (80 % power) | {now} | {then} |",
    ]
    body = [
        f"## Gate `{a.gate}` for {series_label}: false-fail chance and a threshold",
        "",
        f"With nothing changed, this gate fails on {_pct(a.p_fail)} of nights "
        f"(95 % interval {_pct(lo)}–{_pct(hi)}), from {a.basis or f'{a.nights} nights'}. "
        f"In the stored history {h.failing} of {h.nights} nights failed"
        + (" and it never passed under the current threshold" if h.never_passed else "")
        + f" (longest streak {h.longest_streak}).",
        "",
        *rows,
        "",
    ]
    if a.tail_mde is not None:
        body += [
            f"For comparison, a paired per-item test on the same history detects a change of "
            f"{_pct(a.tail_mde)} in the broken share" + _items(a.tail_mde_items, what) + ".",
            "",
        ]
    body += [
        f"**Method.** {METHOD if a.items is not None else METHOD_SUMMARY} "
        "The suggested threshold is the figure's "
        f"{'upper' if a.comparator == '<=' else 'lower'} {_pct(a.target_false_fail)} point "
        "under that model, rounded to three significant digits away from the figure's values.",
        "",
        "Suggested line for the test file:",
        "",
        "```python",
        f"{constant or 'THRESHOLD'} = {_num(line)}  # ≈ {_pct(a.target_false_fail)} false-fail "
        f"per night ({a.nights} nights; omni-tasks gates advise)",
        "```",
    ]
    body += [f"> {n}" for n in a.notes]
    return "\n".join(body) + "\n"
