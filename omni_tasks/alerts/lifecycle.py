"""The alert lifecycle (DESIGN.md "Alert lifecycle"), planned from stored gate decisions.

Per key (series = benchmark × model × lane, candidate, baseline, variant, metric = tail
fraction at the primary τ): a confirmed REGRESSED opens an alert (one top-level message, audio
of the top three regressed clips in its thread); later REGRESSED nights update the parent and
reply; three or more consecutive non-INFRA nights that together rule the regression out (the
streak's pooled Δ tail's upper bound below min_effect) resolve it; until then it stays open,
and says so. INFRA
nights neither resolve nor break a streak; they open an infra alert under their own key,
resolved by the next non-INFRA night.

Planning only writes `alert`, `alert_outbox` and `event` rows (in the caller's transaction, so
with the gate decision); delivery is the dispatcher's job. Every message has an idempotency key,
so planning a night twice adds nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import psycopg
from pydantic import JsonValue
from slack_sdk.models.blocks import ContextBlock

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks, groups, keys
from omni_tasks.alerts.blocks import AlertContext, Message
from omni_tasks.alerts.triage import with_status
from omni_tasks.analysis.bisect import bisect_range
from omni_tasks.analysis.gate import consecutive
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import RuleOut, rule_out
from omni_tasks.config import get_settings
from omni_tasks.contracts import (
    AlertDetails,
    Comparison,
    DecisionKey,
    JsonObject,
    StoredAlert,
    StoredDecision,
)
from omni_tasks.evidence.links import dashboard_path, report_url
from omni_tasks.reports.reproduce import Reproducible, reproduce_command
from omni_tasks.series import Series
from omni_tasks.store import alerts as store
from omni_tasks.store import decisions
from omni_tasks.store.alerts import enqueue
from omni_tasks.store.runs import NightRun, runs_of_night

TOP_AUDIO = 3


def regression_key(d: StoredDecision, tau: float) -> str:
    metric = benchmarks.get(d.benchmark).gated_metric(tau)
    return keys.regression(d.series.key, d.candidate_branch, d.baseline_branch, d.variant, metric)


def infra_key(d: StoredDecision) -> str:
    return keys.infra(d.series.key, d.candidate_branch, d.baseline_branch, d.variant)


def series_name(d: StoredDecision) -> str:
    """The series as an alert names it (Series.name)."""
    return d.series.name


def next_steps(d: StoredDecision, alert_id: int) -> tuple[str, ...]:
    """What a triager runs next on a regression alert: own it, or mark it invalid, and read
    the night's report of its series."""
    s = d.series
    report = (
        f"omni-tasks report --benchmark {s.benchmark} --model {s.model} --lane {s.lane} "
        f"--nightly {d.nightly}"
    )
    return (
        f"omni-tasks alerts ack {alert_id} --note '…'",
        f"omni-tasks alerts invalid {alert_id} --note '…'",
        report,
    )


def links_for(d: StoredDecision) -> dict[str, str]:
    s = get_settings()
    out = {}
    if s.grafana_link_base:
        path = dashboard_path(
            [
                ("var-benchmark", d.benchmark),
                ("var-model", d.series.model),
                ("var-lane", d.series.lane),
                ("var-branch", d.candidate_branch),
                ("var-branch", d.baseline_branch),
            ]
        )
        out["Grafana"] = f"{s.grafana_link_base.rstrip('/')}{path}"
    if s.airflow_url and d.airflow_dag_id and d.airflow_run_id:
        dag, run = quote(d.airflow_dag_id, safe=""), quote(d.airflow_run_id, safe="")
        out["Airflow run"] = f"{s.airflow_url.rstrip('/')}/dags/{dag}/runs/{run}"
    report = report_url(d.series.slug, d.nightly)
    if report is not None:  # served by the plugin app; never a file:// link
        out["Report"] = report
    return out


def _event(
    conn: psycopg.Connection[Any], kind: str, d: StoredDecision, text: str, key: str
) -> None:
    store.insert_event(
        conn,
        time=dt.datetime.combine(d.nightly, dt.time(12), dt.UTC),
        kind=kind,
        benchmark=d.benchmark,
        branch=d.candidate_branch,
        variant=d.variant,
        text=text,
        tags=[kind, d.candidate_branch],
        details={"alert_key": key},
        dedup_key=f"{kind}|{key}|{d.nightly}",
    )


def _context(d: StoredDecision, tau: float) -> AlertContext:
    bench = benchmarks.get(d.benchmark)
    return AlertContext(
        benchmark=d.series.label,  # model and lane always: two series never read alike
        nightly=str(d.nightly),
        candidate=d.candidate_branch,
        baseline=d.baseline_branch,
        variant=d.variant,
        verdict=d.verdict,
        confirmed=d.confirmed,
        tau=tau,
        comparison=d.comparison,
        p_holm=d.mcnemar_p_holm,
        links=links_for(d),
        broken_label=bench.broken_label(tau),
        multiple_choice=bench.judged == "incorrect",
        buttons=get_settings().slack_signing_secret is not None,
    )


def _commit_range(
    conn: psycopg.Connection[Any], d: StoredDecision, opened: dt.date
) -> blocks.CommitRange | None:
    """The candidate's commits around the night the alert opened: on the nights before and
    after every step the series plausibly fits (the auto-bisect's range, analysis/bisect.py
    `bisect_range`)."""
    found = bisect_range(decisions.range_evidence(conn, d.key, opened))
    good, bad = found.last_good, found.first_bad
    if bad is None or not bad.commit_sha:
        return None
    repo = get_settings().repo_url
    compare = (
        f"{repo.rstrip('/')}/compare/{good.commit_sha}...{bad.commit_sha}"
        if repo and good is not None
        else None
    )
    return blocks.CommitRange(
        first_bad=bad.commit_sha,
        first_bad_night=str(bad.nightly),
        last_good=None if good is None else good.commit_sha,
        last_good_night=None if good is None else str(good.nightly),
        compare_url=compare,
        fitted_nights=found.fitted,
    )


@dataclass(frozen=True)
class _Audio:
    utt_id: str
    side: str  # baseline | candidate
    uri: str


def _top_audio(
    conn: psycopg.Connection[Any], d: StoredDecision, comparison: Comparison | None
) -> list[_Audio]:
    """The worst regressed clips' audio, both sides of each (baseline first, so a listener
    hears what it should sound like, then what it does): up to TOP_AUDIO clips."""
    utts = [t.utt_id for t in comparison.top_regressed] if comparison else []
    if not utts or d.candidate_run_id is None:
        return []
    candidate = store.clip_audio_uris(conn, d.candidate_run_id, utts)
    baseline = (
        {} if d.baseline_run_id is None else store.clip_audio_uris(conn, d.baseline_run_id, utts)
    )
    out = []
    for u in [u for u in utts if u in candidate][:TOP_AUDIO]:
        if u in baseline:
            out.append(_Audio(u, "baseline", baseline[u]))
        out.append(_Audio(u, "candidate", candidate[u]))
    return out


def _msg(m: Message, op: str, **extra: JsonValue) -> JsonObject:
    return {"op": op, **m.to_payload(), **extra}


def _withdraw(conn: psycopg.Connection[Any], d: StoredDecision, tau: float) -> None:
    """Resolve, with a note, an open alert whose opening night is no longer a confirmed
    REGRESSED (a backfilled night changed its series); never leave it silently open."""
    key = regression_key(d, tau)
    alert = store.open_alert(conn, key)
    if alert is None or alert.details.decision_id is None:
        return
    opener = decisions.decision_by_id(conn, alert.details.decision_id)
    if opener is not None and opener.verdict == "REGRESSED" and opener.confirmed:
        return
    # Say what the new decision rests on (Δ, counts, Holm p and its family size m): a later
    # run of the same night joins its Holm family and can move p past α.
    why = (
        "its decision is gone"
        if opener is None
        else f"now {opener.verdict}{'' if opener.confirmed else ', not confirmed'}"
        + (f" ({opener.reasons[0]})" if opener.reasons else "")
    )
    night, opened = d.nightly, str(alert.opened_nightly)
    store.resolve_alert(conn, alert.alert_id, max(night, alert.last_nightly))
    groups.member_closed(conn, alert.alert_id, max(night, alert.last_nightly))
    ctx = _context(d, tau)
    enqueue(
        conn,
        f"{key}|{opened}|withdrawn-update",
        alert.alert_id,
        "update",
        _msg(blocks.regression_withdrawn_parent(ctx, opened), "update"),
    )
    enqueue(
        conn,
        f"{key}|{opened}|withdrawn-reply",
        alert.alert_id,
        "reply",
        _msg(blocks.regression_withdrawn_reply(ctx, opened, why), "reply"),
    )
    _event(conn, "regression_withdrawn", d, f"withdrawn: {opened} no longer confirmed", key)


def _regression(
    conn: psycopg.Connection[Any], d: StoredDecision, tau: float, policy: GatePolicy
) -> None:
    key = regression_key(d, tau)
    night = d.nightly
    alert = store.open_alert(conn, key)
    candidate = _candidate_run(conn, d)
    commit = None if candidate is None else candidate.commit_sha
    ctx = _context(d, tau)
    if alert is None:
        if d.verdict == "REGRESSED" and d.confirmed:  # unconfirmed: dashboards only
            _open(conn, d, key, ctx, commit, candidate, policy)
        return
    if d.verdict == "INFRA" or night <= alert.last_nightly:
        return  # INFRA never moves an alert; an earlier or the same night was already planned
    if d.verdict == "REGRESSED":
        _still_regressed(conn, d, key, ctx, commit, alert)
    else:
        _quiet_night(conn, d, key, ctx, alert, policy)


def _open(
    conn: psycopg.Connection[Any],
    d: StoredDecision,
    key: str,
    ctx: AlertContext,
    commit: str | None,
    candidate: NightRun | None,
    policy: GatePolicy,
) -> None:
    """A confirmed REGRESSED night with no open alert: open one (unless a person marked it
    invalid for this commit), post it with its reproduce command and top clips' audio."""
    night = d.nightly
    invalid = store.last_invalid_alert(conn, key)
    if invalid is not None and commit in invalid.details.commits:
        return  # marked invalid by a person; only a new commit in the range reopens it
    opened_by = AlertDetails(decision_id=d.decision_id, commits=[commit])
    alert_id = store.insert_alert(conn, key, "regression", night, opened_by)
    ctx = dataclasses.replace(
        ctx,
        commits=_commit_range(conn, d, night),
        alert_id=alert_id,
        next_steps=next_steps(d, alert_id),
    )
    confirm_p = policy.for_benchmark(d.benchmark).confirm_p
    ctx = dataclasses.replace(ctx, group_id=groups.join(conn, alert_id, d, ctx, confirm_p))
    message = blocks.regression_opened(ctx)
    if candidate is not None:
        message = dataclasses.replace(message, blocks=[*message.blocks, _reproduce(candidate)])
    enqueue(conn, f"{key}|{night}|open", alert_id, "post", _msg(message, "post"))
    for clip in _top_audio(conn, d, ctx.comparison):
        enqueue(
            conn,
            f"{key}|{night}|audio|{clip.utt_id}" + ("|baseline" if clip.side == "baseline" else ""),
            alert_id,
            "upload",
            {
                "op": "upload",
                "file": clip.uri,
                "title": f"{clip.utt_id}: {clip.side} {d.branch(clip.side)} ({night})",
            },
        )
    _event(conn, "regression_opened", d, blocks.headline(ctx), key)


def _still_regressed(
    conn: psycopg.Connection[Any],
    d: StoredDecision,
    key: str,
    ctx: AlertContext,
    commit: str | None,
    alert: StoredAlert,
) -> None:
    """Another REGRESSED night of an open alert: its range and nights grow, the parent message
    is updated and the thread says it is still there."""
    night = d.nightly
    day_before = alert.opened_nightly - dt.timedelta(days=1)
    nights = len(decisions.verdicts_since(conn, d.key, day_before, night))
    commits = {c for c in [*alert.details.commits, commit] if c is not None}
    store.touch_alert(conn, alert.alert_id, night, sorted(commits))
    opened = str(alert.opened_nightly)
    commit_range = _commit_range(conn, d, alert.opened_nightly)
    ctx = dataclasses.replace(
        ctx,
        commits=commit_range,
        alert_id=alert.alert_id,
        next_steps=next_steps(d, alert.alert_id),
    )
    parent = _msg(blocks.regression_parent(ctx, opened, nights), "update")
    enqueue(
        conn,
        f"{key}|{night}|update",
        alert.alert_id,
        "update",
        with_status(parent, alert.details),
    )
    enqueue(
        conn,
        f"{key}|{night}|reply",
        alert.alert_id,
        "reply",
        _msg(blocks.regression_still(ctx), "reply"),
    )


def _quiet_night(
    conn: psycopg.Connection[Any],
    d: StoredDecision,
    key: str,
    ctx: AlertContext,
    alert: StoredAlert,
    policy: GatePolicy,
) -> None:
    night = d.nightly
    # Resolved by the policy's resolve_nights (three; two for multiple choice) or more
    # consecutive non-INFRA nights that together rule the regression out
    # (analysis/resolution.py): their paired tables pooled, Δ tail's upper bound below
    # max(min_effect, what one night can flag) (all IMPROVED also resolves; nights without a
    # table, run groups, resolve only as that many SAME/IMPROVED). One quiet night cannot tell
    # a persisting small step from none, so until then the alert stays open and says so
    # (simulated in bench/bench_statistics_sim.py, "alert resolution").
    pol = policy.for_benchmark(d.benchmark)
    needed = pol.resolve_nights
    recent = [
        v
        for v in decisions.verdicts_since(conn, d.key, alert.last_nightly, night)
        if v.verdict != "INFRA"
    ]
    quiet = 1 if recent else 0  # non-REGRESSED nights in a row, up to tonight
    while quiet < len(recent) and consecutive(
        recent[-quiet - 1].nightly, recent[-quiet].nightly, policy
    ):
        quiet += 1
    # Every quiet night of the streak is pooled: the streak's bound narrows night by night,
    # so an A/A alert resolves and a persisting step above the floor never does.
    last = recent[-max(quiet, needed) :]
    window = len(last) >= needed and quiet >= needed
    tables = [v.table for v in last]
    shown: RuleOut | None = None
    if not tables or any(t is None for t in tables):
        ruled_out = all(v.verdict in ("SAME", "IMPROVED") for v in last[-needed:])
    else:
        shown = rule_out([t for t in tables if t is not None], pol)
        ruled_out = shown.ruled_out or all(v.verdict == "IMPROVED" for v in last)
    floor = shown.floor if shown else pol.min_effect
    if not (window and ruled_out):
        enqueue(
            conn,
            f"{key}|{night}|held",
            alert.alert_id,
            "reply",
            _msg(
                blocks.regression_held(
                    ctx, d.verdict, quiet, needed, shown.high if shown else None, floor
                ),
                "reply",
            ),
        )
        return
    store.resolve_alert(conn, alert.alert_id, night)
    groups.member_closed(conn, alert.alert_id, night)
    opened = str(alert.opened_nightly)
    enqueue(
        conn,
        f"{key}|{night}|resolve-update",
        alert.alert_id,
        "update",
        _msg(blocks.regression_resolved_parent(ctx, opened), "update"),
    )
    enqueue(
        conn,
        f"{key}|{night}|resolve-reply",
        alert.alert_id,
        "reply",
        _msg(
            blocks.regression_resolved_reply(ctx, quiet, shown.high if shown else None, floor),
            "reply",
        ),
    )
    _event(conn, "regression_resolved", d, f"resolved: {blocks.headline(ctx)}", key)


def _candidate_run(conn: psycopg.Connection[Any], d: StoredDecision) -> NightRun | None:
    """The decision's candidate run, with the grader that reproduces it."""
    if d.candidate_run_id is None:
        return None
    found = runs_of_night(conn, d.series, d.nightly, d.candidate_run_id)
    return found[0] if found else None


def _reproduce(run: NightRun) -> ContextBlock:
    """A context block with the command that reproduces the candidate's run."""
    command = reproduce_command(Reproducible.of_run(run), run.grader)
    return blocks.context(f"Reproduce the candidate's run: {blocks.code(command)}")


def _infra(conn: psycopg.Connection[Any], d: StoredDecision) -> None:
    key = infra_key(d)
    night = d.nightly
    alert = store.open_alert(conn, key)
    title = (
        f"INFRA {series_name(d)} {d.candidate_branch} vs {d.baseline_branch} "
        f"({d.variant}) — {night}"
    )
    reasons = [str(r) for r in d.reasons or []]
    if d.verdict == "INFRA":
        if alert is None:
            alert_id = store.insert_alert(conn, key, "infra", night)
            enqueue(
                conn,
                f"{key}|{night}|open",
                alert_id,
                "post",
                _msg(blocks.infra(title, reasons, links_for(d)), "post"),
            )
        elif night > alert.last_nightly:
            store.touch_alert(conn, alert.alert_id, night)
            enqueue(
                conn,
                f"{key}|{night}|reply",
                alert.alert_id,
                "reply",
                _msg(blocks.infra(f"still {title}", reasons), "reply"),
            )
    elif alert is not None and night > alert.last_nightly:
        store.resolve_alert(conn, alert.alert_id, night)
        done = (
            f"INFRA cleared on {night}: {d.candidate_branch} vs {d.baseline_branch} "
            f"({d.variant}) was decided again (verdict {d.verdict})"
        )
        enqueue(
            conn,
            f"{key}|{night}|resolve-reply",
            alert.alert_id,
            "reply",
            _msg(blocks.infra_resolved(done), "reply"),
        )


def plan_alerts(
    conn: psycopg.Connection[Any], series: Series, nightly: dt.date, policy: GatePolicy
) -> int:
    """Advance every alert of one night's decisions of a series; returns the messages newly
    enqueued."""
    before = store.outbox_size(conn)
    for d in _decisions(conn, series, nightly, nightly, policy):
        tau = float(d.tau or policy.primary_tau)
        _infra(conn, d)
        _withdraw(conn, d, tau)
        _regression(conn, d, tau, policy)
        # A night decided late (a backfill) can confirm or unconfirm the nights after it:
        # replay them (planning is idempotent, so nights already planned add nothing).
        for later in _decisions(
            conn, series, nightly + dt.timedelta(days=1), dt.date.max, policy, key=d.key
        ):
            _withdraw(conn, later, tau)
            _regression(conn, later, tau, policy)
    return store.outbox_size(conn) - before


def _decisions(
    conn: psycopg.Connection[Any],
    series: Series,
    first: dt.date,
    last: dt.date,
    policy: GatePolicy,
    key: DecisionKey | None = None,
) -> list[StoredDecision]:
    return decisions.decisions_of_nights(conn, series, first, last, policy.policy_version, key)


def raise_infra(
    conn: psycopg.Connection[Any],
    key: str,
    title: str,
    reasons: list[str],
    dedup: str,
    ids: dict[str, str] | None = None,
    links: dict[str, str] | None = None,
) -> int | None:
    """An infra alert from outside the gate (task failure, missing night): one message per
    `dedup` value, never twice; `ids` are shown copy-pasteable."""
    payload = _msg(blocks.infra(title, reasons, links, ids=ids), "post")
    return enqueue(conn, f"{key}|{dedup}", None, "post", payload)
