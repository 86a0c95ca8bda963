"""A series' night decided as data (functional core): `decide(inputs, policy)` takes what
`store.night.load` read and returns the whole outcome — statistics computed, comparisons,
decisions, confirmations, alert transitions, messages and events — for `store.night.write`.
Nothing here reads or writes the database or calls Slack."""

from __future__ import annotations

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts.night import NightInputs, NightOutcome
from omni_tasks.night import alert_plan, gate


def decide(inputs: NightInputs, policy: GatePolicy) -> NightOutcome:
    """The night's outcome: the gate's decisions, then the alert lifecycle planned on them."""
    policy = policy.for_benchmark(inputs.series.benchmark)
    gated = gate.gate(inputs, policy)
    book = alert_plan.plan(inputs, gated.nights, policy)
    return NightOutcome(
        nightly=inputs.nightly,
        series=inputs.series,
        stats=gated.stats,
        decisions=gated.decisions,
        confirmations=gated.confirmations,
        transitions=book.transitions,
        alert_ops=book.ops,
        messages=book.messages,
        rewrites=book.rewrites,
        events=book.events,
    )
