"""Decide a series' night: one read, a pure decision, one write (the `decide` task and
`omni-tasks gate`).

One transaction holds all three under the night's advisory lock (store/sql/night_lock.sql):
alert ids are read before they are inserted (they are contiguous and printed in message text:
"omni-tasks alerts ack 12"), and alert groups span series, so a concurrent series' decision must
not change either between the read and the write. One lock rather than one per candidate/baseline
pair: nearly every series gates the same pair (rebase against main), so per-pair locks would
serialize them all the same, and ids are shared by every pair.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks import night
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.config import get_settings
from omni_tasks.contracts import Decision
from omni_tasks.contracts.night import NightOutcome, NightQuestion
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.store import night as store


@dataclass(frozen=True)
class SeriesNight:
    """A series' night as decided, and how many of its messages were newly queued."""

    outcome: NightOutcome
    messages_enqueued: int

    @property
    def decisions(self) -> list[Decision]:
        return [row.decision for row in self.outcome.decisions]


def night_question(params: NightlyParams, nightly: dt.date) -> NightQuestion:
    """What deciding a configured series' night asks: its branches against its baseline."""
    return NightQuestion(
        params.series, nightly, params.baseline, tuple(params.branches), params.sim_margin
    )


def decide_series(
    conn: psycopg.Connection[Any], question: NightQuestion, policy: GatePolicy
) -> SeriesNight:
    """Gate a series' night and plan its alerts in one transaction: an alert message exists
    exactly when the decision that caused it does."""
    with conn.transaction():
        inputs = store.load(
            conn, question, policy, triage_delay_s=get_settings().alert_triage_delay_s
        )
        outcome = night.decide(inputs, policy)
        return SeriesNight(outcome, store.write(conn, outcome))


@dataclass(frozen=True)
class FleetDecision:
    decided: list[SeriesNight]
    failed: dict[str, str]  # series label → why it could not be decided


def decide_fleet(
    conn: psycopg.Connection[Any],
    nightly: dt.date,
    policy: GatePolicy,
    series: list[NightlyParams],
) -> FleetDecision:
    """Decide every series of the night, each on its own: a series whose statistics or alerts
    fail is reported (and its error kept) while every other series is still decided."""
    decided, failed = [], {}
    for params in series:
        try:
            decided.append(decide_series(conn, night_question(params, nightly), policy))
        except (psycopg.Error, ValueError, ArithmeticError, LookupError) as exc:
            conn.rollback()
            failed[f"{params.series.label} ({params.variant})"] = f"{type(exc).__name__}: {exc}"
    return FleetDecision(decided, failed)
