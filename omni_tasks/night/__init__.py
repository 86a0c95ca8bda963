"""A series' night decided as data (functional core): `decide(inputs, policy)` takes what
`store.night.load` read and returns the whole outcome — statistics computed, comparisons,
decisions, confirmations, alert transitions, messages and events — for `store.night.write`.
Nothing here reads or writes the database or calls Slack."""

from __future__ import annotations

import dataclasses

from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts.night import NightInputs, NightOutcome, StoredComparison
from omni_tasks.night import alert_plan, gate


def decide(inputs: NightInputs, policy: GatePolicy) -> NightOutcome:
    """The night's outcome: the gate's decisions, then the alert lifecycle planned on them."""
    policy = policy.for_benchmark(inputs.series.benchmark)
    gated = gate.gate(inputs, policy)
    book = alert_plan.plan(inputs, gated.nights, policy)
    comparisons = [StoredComparison(i, columns, result) for i, columns, result in gated.comparisons]
    index = {c.pair: n for n, c in enumerate(comparisons)}
    rows = [
        row if i not in index else dataclasses.replace(row, comparison=index[i])
        for i, row in enumerate(gated.decisions)
    ]
    return NightOutcome(
        nightly=inputs.nightly,
        series=inputs.series,
        stats=gated.stats,
        comparisons=comparisons,
        decisions=rows,
        confirmations=gated.confirmations,
        transitions=book.transitions,
        alert_ops=book.ops,
        messages=book.messages,
        rewrites=book.rewrites,
        events=book.events,
    )
