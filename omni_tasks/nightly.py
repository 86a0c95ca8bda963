"""The nightly's decision step: gate a night and plan its alerts in one transaction, so an
alert message exists exactly when the decision that caused it does."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.alerts.lifecycle import plan_alerts
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.service import gate_nightly


@dataclass(frozen=True)
class NightDecision:
    nightly: dt.date
    decisions: list[dict[str, Any]]
    messages_enqueued: int


def decide_night(
    conn: psycopg.Connection[Any],
    nightly: dt.date,
    policy: GatePolicy,
    *,
    benchmark: str,
    baseline_branch: str,
    expect: tuple[str, ...] = (),
) -> NightDecision:
    with conn.transaction():
        decisions = gate_nightly(
            conn, nightly, policy, benchmark=benchmark, baseline_branch=baseline_branch,
            expect=expect,
        )  # fmt: skip
        enqueued = plan_alerts(conn, benchmark, nightly, policy)
    return NightDecision(nightly, decisions, enqueued)
