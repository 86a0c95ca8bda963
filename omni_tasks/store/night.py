"""A series' night in and out of the results DB: `load` reads everything the pure
`night.decide` needs (one query per kind of row, each bounded by a window of nights, never by
the series' whole history); `write` stores its outcome. The caller holds one transaction
around both (jobs/decide.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from typing import Any

import psycopg

from omni_tasks.analysis.bisect import RANGE_WINDOW_DAYS
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.contracts import AlertDetails, Comparison, DecisionHistory, RunStats, StoredAlert
from omni_tasks.contracts.night import (
    AlertOp,
    GradedRun,
    GroupMemberRow,
    GroupState,
    ItemHistory,
    KeyNight,
    NightInputs,
    NightKey,
    NightOutcome,
    NightQuestion,
    night_key,
)
from omni_tasks.records import NightRun, StoredRun
from omni_tasks.series import Series
from omni_tasks.store import alerts, decisions, reruns, results
from omni_tasks.store.queries import sql
from omni_tasks.store.runs import clip_records

Row = dict[str, Any]


def load(
    conn: psycopg.Connection[Any],
    question: NightQuestion,
    policy: GatePolicy,
    *,
    triage_delay_s: int = 0,
) -> NightInputs:
    """Everything one series' night is decided from. Takes the night's lock first (night_lock
    .sql), so the alert state and the next alert id cannot change before `write`."""
    series, nightly, baseline_branch = question.series, question.nightly, question.baseline_branch
    policy = policy.for_benchmark(series.benchmark)
    conn.execute(sql("night_lock"))
    next_id = int(_rows(conn, "night_next_alert_id")[0]["next_id"])
    runs = results.nightly_runs(conn, series, nightly)
    alerts_ = [StoredAlert.of(r) for r in _rows(conn, "night_alerts", prefix=f"{series.key}|")]
    open_alerts = {a.alert_key: a for a in alerts_ if a.state == "open"}
    w = policy.confirm_window_days * (policy.confirm_pool_nights - 1)
    opened = [a.opened_nightly for a in open_alerts.values() if a.kind == "regression"]
    first = min([nightly, *opened]) - dt.timedelta(days=max(w, RANGE_WINDOW_DAYS) + 1)
    last = nightly + dt.timedelta(days=w)
    version = {**series.args(), "policy_version": policy.policy_version}
    history = [
        _key_night(r, version)
        for r in _rows(conn, "night_decisions", **version, nightly=nightly, first=first, last=last)
    ]
    later = [k.candidate_run_id for k in history if k.nightly > nightly and k.candidate_run_id]
    rows, reads = _runs(conn, [r.run_id for r in runs] + later)
    graded = _graded(conn, [reads[r.run_id] for r in runs if r.grading_id is not None])
    known = {k.decision_id for k in history}
    wanted = [a.details.decision_id for a in open_alerts.values() if a.details.decision_id]
    openers = _rows(conn, "night_openers", ids=[i for i in wanted if i not in known])
    groups, lone = _groups(
        conn,
        [a.group_id for a in open_alerts.values() if a.group_id is not None],
        baseline_branch,
        nightly - dt.timedelta(days=RANGE_WINDOW_DAYS + 2),
        last + dt.timedelta(days=1),
    )
    stats = _rows(
        conn,
        "night_stored_stats",
        grading_ids=[g.grading_id for g in graded],
        tau=policy.primary_tau,
        policy_version=policy.policy_version,
    )
    return NightInputs(
        **vars(question),
        policy_version=policy.policy_version,
        runs=tuple(runs),
        graded={g.run.run_key: g for g in graded},
        stats={r["grading_id"]: RunStats.from_json(r["stats"]) for r in stats},
        run_rows=rows,
        history=tuple(history),
        openers={r["decision_id"]: KeyNight(**r) for r in openers},
        open_alerts=open_alerts,
        invalid_alerts={a.alert_key: a for a in alerts_ if a.state != "open"},
        groups=groups,
        lone=lone,
        audio=_audio(conn, [k for k in history if k.nightly > nightly]),
        next_alert_id=next_id,
        baseline_items=_baseline_items(
            conn, series, baseline_branch, nightly, policy.history_nights, policy.primary_tau
        ),
        baseline_totals=_baseline_totals(conn, series, baseline_branch, nightly, policy),
        triage_delay_s=triage_delay_s,
        reruns=reruns.of_window(conn, series, first, last),
    )


def _rows(conn: psycopg.Connection[Any], query: str, **args: Any) -> list[Row]:
    """A night query's rows; none, without asking, for an empty list of ids to look up."""
    if any(v == [] for v in args.values()):
        return []
    return conn.execute(sql(query), args).fetchall()


def _key_night(r: Row, version: Row) -> KeyNight:
    """A window night of night_decisions.sql (the series and policy version it was read for)."""
    table = None if r["n11"] is None else (r["n11"], r["n12"], r["n21"], r["n22"])
    comparison, history = r["comparison"], r["history"]
    read = ("n11", "n12", "n21", "n22", "comparison", "history")
    return KeyNight(
        **{k: v for k, v in r.items() if k not in read},
        **version,
        table=table,
        comparison=None if comparison is None else Comparison.from_json(comparison),
        history=None if history is None else DecisionHistory.from_json(history),
    )


Read = tuple[NightRun, int | None, str | None]  # a run, the grading read of it and its grader


def _runs(
    conn: psycopg.Connection[Any], run_ids: list[int]
) -> tuple[dict[int, NightRun], dict[int, Read]]:
    """Runs by id, and the grading the statistics read of each."""
    fields = {f.name for f in dataclasses.fields(NightRun)}
    rows, reads = {}, {}
    for r in _rows(conn, "night_runs", run_ids=run_ids):
        run = NightRun(**{k: v for k, v in r.items() if k in fields})
        rows[run.run_id] = run
        reads[run.run_id] = (run, r["read_grading_id"], r["read_grader_id"])
    return rows, reads


def _graded(conn: psycopg.Connection[Any], reads: list[Read]) -> list[GradedRun]:
    """The runs with the grading the statistics read and its clip records: one query a run
    (clip_records.sql, pruned to one partition by its constants; a join over several runs
    is planned as a scan that grows with history)."""
    stored = {f.name for f in dataclasses.fields(StoredRun)}
    return [
        GradedRun(StoredRun(**{k: getattr(r, k) for k in stored}), g, gid, clip_records(conn, g))
        for r, g, gid in reads
        if g is not None and gid is not None
    ]


def _groups(
    conn: psycopg.Connection[Any],
    group_ids: list[int],
    baseline: str,
    first: dt.date,
    last: dt.date,
) -> tuple[tuple[GroupState, ...], tuple[GroupMemberRow, ...]]:
    """Groups of the series' open alerts and groups and lone regressions of the baseline whose
    nights overlap (first, last), with their members and whether their post is pending."""
    window = {"baseline": baseline, "first": first, "last": last}
    found = conn.execute(sql("night_groups"), {"ids": group_ids, **window})
    rows = [StoredAlert.of(r) for r in found]
    ids = [g.alert_id for g in rows]
    found = conn.execute(sql("night_group_members"), {"ids": ids, **window})
    members = [alerts.member_of(r) for r in found]
    pending = {r["alert_id"] for r in _rows(conn, "night_pending_posts", ids=ids)}
    groups = tuple(
        GroupState(
            g,
            tuple(m for m in members if m.alert.group_id == g.alert_id),
            g.alert_id in pending,
        )
        for g in rows
    )
    lone = tuple(m for m in members if m.alert.group_id is None)
    return groups, lone


def _audio(conn: psycopg.Connection[Any], later: list[KeyNight]) -> dict[tuple[int, str], str]:
    utts = {t.utt_id for k in later if k.comparison for t in k.comparison.top_regressed}
    runs = {r for k in later for r in (k.candidate_run_id, k.baseline_run_id) if r is not None}
    if not utts or not runs:
        return {}
    args = {"run_ids": sorted(runs), "utt_ids": sorted(utts)}
    return {
        (r["run_id"], r["utt_id"]): r["audio_uri"] for r in conn.execute(sql("night_audio"), args)
    }


def _baseline_items(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    nightly: dt.date,
    nights: int,
    tau: float,
) -> ItemHistory:
    """The baseline's items over its last `nights` nights: the nights' runs, their stored item
    sets, and for a night read for the first time its set from its clips, stored (one query a
    run, as clip_records.sql): a window then reads one row a night, not every item's."""
    args = {**series.args(), "branch": branch, "nightly": nightly}
    args["first"] = nightly - dt.timedelta(days=nights)
    runs = conn.execute(sql("night_baseline_runs"), args).fetchall()
    ids = [r["grading_id"] for r in runs]
    stored = {r["grading_id"]: r for r in _rows(conn, "night_item_sets", grading_ids=ids, tau=tau)}
    broken: list[tuple[dt.date, frozenset[str]]] = []
    observed: Counter[str] = Counter()
    for run in runs:
        first_read = {"run_id": run["run_id"], "grading_id": run["grading_id"], "tau": tau}
        row = (
            stored.get(run["grading_id"])
            or conn.execute(sql("night_baseline_items"), first_read).fetchone()
        )
        if row is not None:  # a run with no clip stores (and observed) nothing
            observed.update(row["observed"])
            broken.append((run["nightly"], frozenset(row["broken"])))
    return ItemHistory(tuple(broken), observed)


def _baseline_totals(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    nightly: dt.date,
    policy: GatePolicy,
) -> tuple[tuple[dt.date, int], ...]:
    """The baseline's broken total on each of the last `phi_nights` nights, from its stored
    statistics (one row a night; a night whose statistics were never stored is left out)."""
    args = {**series.args(), "branch": branch, "nightly": nightly, "tau": policy.primary_tau}
    args["first"] = nightly - dt.timedelta(days=policy.phi_nights)
    args["policy_version"] = policy.policy_version
    rows = conn.execute(sql("night_baseline_totals"), args).fetchall()
    return tuple((r["nightly"], r["n_broken"]) for r in rows if r["n_broken"] is not None)


def write(conn: psycopg.Connection[Any], outcome: NightOutcome) -> int:
    """Store a night's outcome (in the caller's transaction, after `load`): statistics,
    comparisons, decisions, confirmations, alert rows, messages and events. Returns the
    messages newly queued (a night planned twice queues nothing the second time)."""
    for grading_id, tau, version, stats in outcome.stats:
        results.upsert_run_stats(conn, grading_id, tau, version, stats)
    decided = {}
    for row in outcome.decisions:
        c = row.comparison
        cid = None if c is None else results.upsert_comparison(conn, c.columns, c.result)
        decided[night_key(row.decision)] = decisions.upsert(conn, outcome.series, row, cid)
    for confirmation in outcome.confirmations:
        decisions.set_confirmed(conn, confirmation.decision_id, confirmation.confirmed)
    for op in outcome.alert_ops:
        _alert_op(conn, op, decided)
    queued = sum(
        alerts.enqueue(conn, m.idempotency_key, m.alert_id, m.kind, m.payload) is not None
        for m in outcome.messages
    )
    for r in outcome.rewrites:
        alerts.replace_pending_post(conn, r.alert_id, r.payload)
    for e in outcome.events:
        alerts.insert_event(conn, **dataclasses.asdict(e))
    return queued


def _alert_op(
    conn: psycopg.Connection[Any],
    op: AlertOp,
    decided: dict[NightKey, int],
) -> None:
    night = op.nightly or dt.date.min  # every op but member_range names its night
    if op.op == "insert":
        assert op.alert_key and op.kind
        assert op.kind != "group" or (op.range_from and op.range_to)
        details = op.details or AlertDetails()
        if op.opener is not None:
            details = dataclasses.replace(details, decision_id=decided[op.opener])
        got = alerts.insert_alert(
            conn, op.alert_key, op.kind, night, details, op.range_from, op.range_to
        )
        if got != op.alert_id:  # another writer took an id under the night's lock
            raise RuntimeError(f"alert {op.alert_key} got id {got}, planned {op.alert_id}")
    elif op.op == "touch":
        alerts.touch_alert(conn, op.alert_id, night, op.commits)
    elif op.op == "resolve":
        alerts.resolve_alert(conn, op.alert_id, night)
    elif op.op == "member_range":
        assert op.range_from and op.range_to and op.details
        alerts.set_member_range(
            conn, op.alert_id, op.range_from, op.range_to, op.delay_s, op.details
        )
    elif op.op == "join":
        assert op.group_id and op.range_from and op.range_to and op.nightly
        alerts.join_group(
            conn, op.group_id, op.alert_id, op.nightly, op.range_from, op.range_to, op.delay_s
        )
    else:
        raise ValueError(f"unknown alert op {op.op!r}")
