"""The alert lifecycle (DESIGN.md "Alert lifecycle"), planned from the night's decisions and
the alert state it was loaded with: each decision's transition, the alert rows it writes, and
its messages and events. Pure: the state lives in a `Book` that planning updates as it goes,
so a night decided late (a backfill) replays the nights after it against what it changed.

Per key (series = benchmark × model × lane, candidate, baseline, variant, metric = tail
fraction at the primary τ): a confirmed REGRESSED opens an alert (one top-level message, audio
of the top three regressed clips in its thread); later REGRESSED nights update the parent and
reply; `resolve_nights` or more consecutive non-INFRA nights that together rule the
regression out resolve it; until then it stays open, and says so. INFRA nights neither
resolve nor break a streak; they open an infra alert under their own key, resolved by the
next non-INFRA night. Every message has an idempotency key, so planning a night twice adds
nothing.

Groups: night/groups.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from omni_tasks.alerts import blocks, keys, messages
from omni_tasks.alerts.blocks import AlertContext
from omni_tasks.analysis.bisect import NightEvidence, bisect_range
from omni_tasks.analysis.gate import consecutive
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import RuleOut, rule_out
from omni_tasks.config import get_settings
from omni_tasks.contracts import AlertDetails, StoredAlert
from omni_tasks.contracts.night import GroupMemberRow, KeyNight, NightInputs, night_key
from omni_tasks.night import groups
from omni_tasks.night.book import Book
from omni_tasks.night.gate import NEW
from omni_tasks.night.history import noise, restarts

TOP_AUDIO = 3


def plan(inputs: NightInputs, nights: list[KeyNight], policy: GatePolicy) -> Book:
    """Advance every alert of the night's decisions; a night decided late replays the nights
    after it (confirmations it changed can open or withdraw their alerts)."""
    book = Book.of(inputs, nights)
    night = inputs.nightly
    for d in [k for k in nights if k.nightly == night]:
        tau = float(d.tau or policy.primary_tau)
        _infra(book, d)
        for k in [d] + [x for x in nights if x.pair == d.pair and x.nightly > night]:
            _withdraw(book, k, tau)
            _regression(book, k, tau, policy)
    return book


def _commit_range(book: Book, d: KeyNight, opened: dt.date) -> blocks.CommitRange | None:
    """The candidate's commits around the night the alert opened: on the nights before and
    after every step the series plausibly fits (analysis/bisect.py `bisect_range`)."""
    nights = [
        NightEvidence(k.nightly, k.verdict, k.commit_sha, k.table, k.vllm)
        for k in reversed(book.pair_nights(d))
        if k.nightly <= opened
    ]
    found = bisect_range(nights)
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


def _of_alert(
    book: Book, d: KeyNight, ctx: AlertContext, alert_id: int, opened: dt.date
) -> AlertContext:
    """A decision's context as its alert's messages show it: the commit range, what to run."""
    commits = _commit_range(book, d, opened)
    steps = messages.next_steps(d, alert_id, commits)
    return dataclasses.replace(ctx, commits=commits, alert_id=alert_id, next_steps=steps)


def _withdraw(book: Book, d: KeyNight, tau: float) -> None:
    """Resolve, with a note, an open alert whose opening night is no longer a confirmed
    REGRESSED (a backfilled night changed its series); never leave it silently open."""
    key = keys.of_regression(d, tau)
    alert = book.open_alert(key)
    if alert is None or (
        alert.details.decision_id is None and alert.alert_id not in book.opened_on
    ):
        return
    opener = book.opener(alert)
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
    book.resolve(alert.alert_id, max(night, alert.last_nightly))
    groups.member_closed(book, alert.alert_id, max(night, alert.last_nightly))
    ctx = messages.context(d, tau)
    parent = blocks.regression_withdrawn_parent(ctx, opened)
    book.say(f"{key}|{opened}|withdrawn-update", alert.alert_id, "update", parent)
    reply = blocks.regression_withdrawn_reply(ctx, opened, why)
    book.say(f"{key}|{opened}|withdrawn-reply", alert.alert_id, "reply", reply)
    book.event("regression_withdrawn", d, f"withdrawn: {opened} no longer confirmed", key)
    book.moved("withdraw", alert.alert_id, d, key, why)


def _regression(book: Book, d: KeyNight, tau: float, policy: GatePolicy) -> None:
    key = keys.of_regression(d, tau)
    alert = book.open_alert(key)
    run = book.run(d.candidate_run_id)
    commit = run.commit_sha if run is not None and run.nightly == d.nightly else None
    ctx = messages.context(d, tau)
    if alert is None:
        if d.verdict == "REGRESSED" and d.confirmed:  # unconfirmed: dashboards only
            _open(book, d, key, ctx, commit, policy)
        return
    if d.verdict == "INFRA" or d.nightly <= alert.last_nightly:
        return  # INFRA never moves an alert; an earlier or the same night was already planned
    # A REGRESSED night short of a restart (unconfirmed, McNemar's p not below
    # resolve_restart_alpha once widened by φ) neither restarts the streak nor is left out of
    # it: restarted on McNemar's p at α, 80 % of A/A alerts at 2,700 questions with run-level
    # noise (φ ≈ 3.6) resolved within three nights; widened by φ, 94.975 % (issue 65).
    pol = policy.for_benchmark(d.benchmark)
    if d.verdict == "REGRESSED" and restarts(d.mcnemar_p_holm, d.history, d.confirmed, pol):
        _still_regressed(book, d, key, ctx, commit, alert)
    else:
        _quiet_night(book, d, key, ctx, alert, policy)


def _open(
    book: Book,
    d: KeyNight,
    key: str,
    ctx: AlertContext,
    commit: str | None,
    policy: GatePolicy,
) -> None:
    """A confirmed REGRESSED night with no open alert: open one (unless a person marked it
    invalid for this commit), post it with its reproduce command and top clips' audio."""
    night = d.nightly
    invalid = book.inputs.invalid_alerts.get(key)
    if invalid is not None and commit in invalid.details.commits:
        return  # marked invalid by a person; only a new commit in the range reopens it
    decision_id = None if d.decision_id == NEW else d.decision_id
    alert_id = book.insert(key, "regression", night, AlertDetails(decision_id, [commit]))
    if decision_id is None:
        ref = night_key(d)
        book.opened_on[alert_id] = ref
        book.ops[-1] = dataclasses.replace(book.ops[-1], opener=ref)
    book.members[alert_id] = GroupMemberRow(
        book.alerts[alert_id], d.series, d.candidate_branch, d.baseline_branch
    )
    ctx = _of_alert(book, d, ctx, alert_id, night)
    confirm_p = policy.for_benchmark(d.benchmark).confirm_p
    ctx = dataclasses.replace(ctx, group_id=groups.join(book, alert_id, d, ctx, confirm_p))
    message = blocks.regression_opened(ctx)
    candidate = book.run(d.candidate_run_id)
    if candidate is not None and candidate.nightly == night:
        message = dataclasses.replace(
            message, blocks=[*message.blocks, messages.reproduce(candidate)]
        )
    book.say(f"{key}|{night}|open", alert_id, "post", message)
    for utt, side, uri in _top_audio(book, d):
        book.enqueue(
            f"{key}|{night}|audio|{utt}" + ("|baseline" if side == "baseline" else ""),
            alert_id,
            "upload",
            {"op": "upload", "file": uri, "title": f"{utt}: {side} {d.branch(side)} ({night})"},
        )
    book.event("regression_opened", d, blocks.headline(ctx), key)
    book.moved("open", alert_id, d, key)


def _top_audio(book: Book, d: KeyNight) -> list[tuple[str, str, str]]:
    """The worst regressed clips' audio, both sides of each (baseline first, so a listener
    hears what it should sound like, then what it does): up to TOP_AUDIO clips."""
    c = d.comparison
    utts = [t.utt_id for t in c.top_regressed] if c else []
    if not utts or d.candidate_run_id is None:
        return []
    out = []
    shown = [u for u in utts if book.audio_uri(d.candidate_run_id, u) is not None]
    for u in shown[:TOP_AUDIO]:
        base = None if d.baseline_run_id is None else book.audio_uri(d.baseline_run_id, u)
        if base is not None:
            out.append((u, "baseline", base))
        out.append((u, "candidate", book.audio_uri(d.candidate_run_id, u) or ""))
    return out


def _still_regressed(
    book: Book,
    d: KeyNight,
    key: str,
    ctx: AlertContext,
    commit: str | None,
    alert: StoredAlert,
) -> None:
    """Another REGRESSED night of an open alert: its range and nights grow, the parent message
    is updated and the thread says it is still there."""
    night = d.nightly
    day_before = alert.opened_nightly - dt.timedelta(days=1)
    nights = len(book.verdicts_since(d, day_before, night))
    commits = {c for c in [*alert.details.commits, commit] if c is not None}
    book.touch(alert.alert_id, night, sorted(commits))
    opened = str(alert.opened_nightly)
    ctx = _of_alert(book, d, ctx, alert.alert_id, alert.opened_nightly)
    parent = messages.msg(blocks.regression_parent(ctx, opened, nights), "update")
    update = messages.with_status(parent, alert.details)
    book.enqueue(f"{key}|{night}|update", alert.alert_id, "update", update)
    book.say(f"{key}|{night}|reply", alert.alert_id, "reply", blocks.regression_still(ctx))
    book.moved("still", alert.alert_id, d, key)


def _quiet_night(
    book: Book,
    d: KeyNight,
    key: str,
    ctx: AlertContext,
    alert: StoredAlert,
    policy: GatePolicy,
) -> None:
    night = d.nightly
    # Resolved by the policy's resolve_nights (three) or more consecutive non-INFRA nights
    # that together rule the regression out (analysis/resolution.py): their paired tables
    # pooled (or, where each night has precise history evidence, the nights against the
    # baseline's history), Δ tail's upper bound below a floor chosen from the series' ψ/n,
    # min_effect or wider where the size cannot tell less from noise (all IMPROVED also
    # resolves; nights without a table, run groups, resolve only as that many SAME/IMPROVED),
    # both widened by the newest night's run-level noise φ: the streak's φ̂ share all but a
    # few of their nightly totals, and the pooled confirmation reads the newest's too. One
    # quiet night cannot tell a persisting small step from none, so until then the alert
    # stays open and says so (simulated in bench/bench_statistics_sim.py, "alert resolution").
    pol = policy.for_benchmark(d.benchmark)
    needed = pol.resolve_nights
    recent = [k for k in book.verdicts_since(d, alert.last_nightly, night) if k.verdict != "INFRA"]
    quiet = 1 if recent else 0  # nights in a row since the last restart
    while quiet < len(recent) and consecutive(
        recent[-quiet - 1].nightly, recent[-quiet].nightly, policy
    ):
        quiet += 1
    # Every quiet night of the streak is pooled: the streak's bound narrows night by night,
    # so an A/A alert resolves and a persisting step above the floor never does.
    last = recent[-max(quiet, needed) :]
    window = len(last) >= needed and quiet >= needed
    tables = [k.table for k in last]
    shown: RuleOut | None = None
    if not tables or any(t is None for t in tables):
        ruled_out = all(k.verdict in ("SAME", "IMPROVED") for k in last[-needed:])
    else:
        histories = [k.history for k in last]
        shown = rule_out(
            [t for t in tables if t is not None], pol, *noise(last[-1].history), histories
        )
        ruled_out = shown.ruled_out or all(k.verdict == "IMPROVED" for k in last)
    floor = shown.floor if shown else pol.min_effect
    high = shown.high if shown else None
    basis = shown.basis(pol.min_effect) if shown else "the policy's min_effect"
    if d.verdict == "REGRESSED":
        ctx = dataclasses.replace(ctx, verdict="REGRESSED within noise")
    if not (window and ruled_out):
        held = blocks.regression_held(ctx, ctx.verdict, quiet, needed, high, floor, basis)
        book.say(f"{key}|{night}|held", alert.alert_id, "reply", held)
        book.moved("held", alert.alert_id, d, key, f"{quiet} of {needed} quiet nights")
        return
    book.resolve(alert.alert_id, night)
    groups.member_closed(book, alert.alert_id, night)
    opened = str(alert.opened_nightly)
    parent = blocks.regression_resolved_parent(ctx, opened)
    book.say(f"{key}|{night}|resolve-update", alert.alert_id, "update", parent)
    reply = blocks.regression_resolved_reply(ctx, quiet, high, floor, basis)
    book.say(f"{key}|{night}|resolve-reply", alert.alert_id, "reply", reply)
    book.event("regression_resolved", d, f"resolved: {blocks.headline(ctx)}", key)
    book.moved("resolve", alert.alert_id, d, key)


def _infra(book: Book, d: KeyNight) -> None:
    key = keys.of_infra(d)
    night = d.nightly
    alert = book.open_alert(key)
    title = (
        f"INFRA {d.series.name} {d.candidate_branch} vs {d.baseline_branch} ({d.variant}) — {night}"
    )
    reasons = [str(r) for r in d.reasons or []]
    if d.verdict == "INFRA":
        if alert is None:
            alert_id = book.insert(key, "infra", night, AlertDetails())
            post = blocks.infra(title, reasons, messages.links_for(d))
            book.say(f"{key}|{night}|open", alert_id, "post", post)
            book.moved("infra", alert_id, d, key, "opened")
        elif night > alert.last_nightly:
            book.touch(alert.alert_id, night)
            reply = blocks.infra(f"still {title}", reasons)
            book.say(f"{key}|{night}|reply", alert.alert_id, "reply", reply)
            book.moved("infra", alert.alert_id, d, key, "still")
    elif alert is not None and night > alert.last_nightly:
        book.resolve(alert.alert_id, night)
        done = (
            f"INFRA cleared on {night}: {d.candidate_branch} vs {d.baseline_branch} "
            f"({d.variant}) was decided again (verdict {d.verdict})"
        )
        reply = blocks.infra_resolved(done)
        book.say(f"{key}|{night}|resolve-reply", alert.alert_id, "reply", reply)
        book.moved("infra", alert.alert_id, d, key, "cleared")
