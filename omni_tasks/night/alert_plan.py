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

Alert groups (Chromeperf's): a confirmed regression joins the group of its candidate/baseline
pair whose range of nights overlaps its own (last good night, first bad night]; with no such
group it forms one with another lone alert of the pair that overlaps. From its second member
on, the group posts one parent and its members' messages go into its thread; opening posts
wait the triage delay so that the night's other series can join first. The group closes when
every member has recovered or been closed, and reopens when a new member joins.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks, keys, messages
from omni_tasks.alerts.blocks import AlertContext
from omni_tasks.analysis.bisect import NightEvidence, bisect_range
from omni_tasks.analysis.gate import consecutive
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import RuleOut, rule_out
from omni_tasks.config import get_settings
from omni_tasks.contracts import AlertDetails, JsonObject, StoredAlert, StoredDecision
from omni_tasks.contracts.night import (
    AlertOp,
    AlertTransition,
    Event,
    GroupMemberRow,
    KeyNight,
    Message,
    NightInputs,
    PostRewrite,
)
from omni_tasks.night.gate import NEW

if TYPE_CHECKING:
    from omni_tasks.store.runs import NightRun

TOP_AUDIO = 3


def regression_key(d: StoredDecision, tau: float) -> str:
    metric = benchmarks.get(d.benchmark).gated_metric(tau)
    return keys.regression(d.series.key, d.candidate_branch, d.baseline_branch, d.variant, metric)


def infra_key(d: StoredDecision) -> str:
    return keys.infra(d.series.key, d.candidate_branch, d.baseline_branch, d.variant)


def stored(k: KeyNight, inputs: NightInputs) -> StoredDecision:
    """A window night as the lifecycle reads a stored decision."""
    s = inputs.series
    return StoredDecision(
        decision_id=k.decision_id,
        benchmark=s.benchmark,
        model=s.model,
        lane=s.lane,
        nightly=k.nightly,
        candidate_branch=k.candidate_branch,
        baseline_branch=k.baseline_branch,
        variant=k.variant,
        verdict=k.verdict,
        confirmed=k.confirmed,
        mcnemar_p_holm=k.mcnemar_p_holm,
        reasons=k.reasons,
        policy_version=inputs.policy_version,
        comparison=k.comparison,
        tau=k.tau,
        candidate_run_id=k.candidate_run_id,
        candidate_run_key=k.candidate_run_key,
        baseline_run_id=k.baseline_run_id,
        airflow_dag_id=k.airflow_dag_id,
        airflow_run_id=k.airflow_run_id,
    )


@dataclass
class Group:
    row: StoredAlert
    members: list[int]  # alert ids, oldest first
    pending_post: bool  # its opening post is not sent yet (stored, or planned tonight)


@dataclass
class Book:
    """The alert state as planning changes it, and what planning wrote."""

    inputs: NightInputs
    nights: list[KeyNight]
    alerts: dict[int, StoredAlert] = field(default_factory=dict)
    open_by_key: dict[str, int] = field(default_factory=dict)
    members: dict[int, GroupMemberRow] = field(default_factory=dict)  # regression alerts
    groups: dict[int, Group] = field(default_factory=dict)
    opened_on: dict[int, tuple[dt.date, str, str, str]] = field(default_factory=dict)
    next_id: int = 0
    ops: list[AlertOp] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    rewrites: list[PostRewrite] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    transitions: list[AlertTransition] = field(default_factory=list)

    @classmethod
    def of(cls, inputs: NightInputs, nights: list[KeyNight]) -> Book:
        book = cls(inputs, nights, next_id=inputs.next_alert_id)
        for a in inputs.open_alerts.values():
            book.alerts[a.alert_id] = a
            book.open_by_key[a.alert_key] = a.alert_id
        for m in inputs.lone:
            book.alerts.setdefault(m.alert.alert_id, m.alert)
            book.members[m.alert.alert_id] = m
        for g in inputs.groups:
            book.alerts[g.group.alert_id] = g.group
            ids = [m.alert.alert_id for m in g.members]
            book.groups[g.group.alert_id] = Group(g.group, ids, g.pending_post)
            for m in g.members:
                book.alerts[m.alert.alert_id] = book.alerts.get(m.alert.alert_id, m.alert)
                book.members[m.alert.alert_id] = m
        return book

    # -------------------------------------------------------------- alert rows
    def insert(self, key: str, kind: str, night: dt.date, details: AlertDetails) -> int:
        alert_id, self.next_id = self.next_id, self.next_id + 1
        row = StoredAlert(
            alert_id=alert_id,
            alert_key=key,
            kind=kind,
            state="open",
            opened_nightly=night,
            last_nightly=night,
            resolved_nightly=None,
            channel=None,
            parent_ts=None,
            details=details,
            created_at=dt.datetime.min,
            group_id=None,
            range_from=None,
            range_to=None,
            hold_until=None,
            thread_ts=None,
        )
        self.alerts[alert_id] = row
        if kind != "group":
            self.open_by_key[key] = alert_id
        self.ops.append(AlertOp("insert", alert_id, key, kind, night, details))
        return alert_id

    def update(self, alert_id: int, **changes: object) -> StoredAlert:
        row = dataclasses.replace(self.alerts[alert_id], **changes)  # type: ignore[arg-type]
        self.alerts[alert_id] = row
        if alert_id in self.members:
            self.members[alert_id] = dataclasses.replace(self.members[alert_id], alert=row)
        if alert_id in self.groups:
            self.groups[alert_id].row = row
        return row

    def touch(self, alert_id: int, night: dt.date, commits: list[str] | None = None) -> None:
        row = self.alerts[alert_id]
        details = (
            row.details
            if commits is None
            else dataclasses.replace(row.details, commits=list(commits))
        )
        self.update(alert_id, last_nightly=night, details=details)
        self.ops.append(AlertOp("touch", alert_id, nightly=night, commits=commits))

    def resolve(self, alert_id: int, night: dt.date) -> None:
        row = self.update(alert_id, state="resolved", resolved_nightly=night)
        if self.open_by_key.get(row.alert_key) == alert_id:
            del self.open_by_key[row.alert_key]
        self.ops.append(AlertOp("resolve", alert_id, nightly=night))

    def open_alert(self, key: str) -> StoredAlert | None:
        found = self.open_by_key.get(key)
        return None if found is None else self.alerts[found]

    # -------------------------------------------------------------- messages
    def enqueue(self, key: str, alert_id: int | None, kind: str, payload: JsonObject) -> None:
        self.messages.append(Message(key, alert_id, kind, payload))

    def event(self, kind: str, d: StoredDecision, text: str, key: str) -> None:
        self.events.append(
            Event(
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
        )

    def moved(
        self, kind: str, alert_id: int, d: StoredDecision, key: str, detail: str = ""
    ) -> None:
        group = self.alerts[alert_id].group_id
        self.transitions.append(AlertTransition(kind, key, alert_id, d.nightly, detail, group))

    # -------------------------------------------------------------- decisions
    def pair_nights(self, d: StoredDecision) -> list[KeyNight]:
        pair = (d.candidate_branch, d.baseline_branch, d.variant)
        return [k for k in self.nights if k.pair == pair]

    def verdicts_since(self, d: StoredDecision, after: dt.date, until: dt.date) -> list[KeyNight]:
        return [k for k in self.pair_nights(d) if after < k.nightly <= until]

    def opener(self, alert: StoredAlert) -> KeyNight | None:
        """The decision an alert opened on, as it stands now (None: it is gone)."""
        ref = self.opened_on.get(alert.alert_id)
        if ref is not None:
            return next((k for k in self.nights if (k.nightly, *k.pair) == ref), None)
        decision_id = alert.details.decision_id
        now = next((k for k in self.nights if k.decision_id == decision_id), None)
        return now or self.inputs.openers.get(decision_id or 0)

    def run(self, run_id: int | None) -> NightRun | None:
        return None if run_id is None else self.inputs.run_rows.get(run_id)

    def audio_uri(self, run_id: int, utt_id: str) -> str | None:
        found = self.inputs.audio.get((run_id, utt_id))
        if found is not None:
            return found
        for g in self.inputs.graded.values():
            if g.run.run_id == run_id:
                return next((c.audio_uri for c in g.clips if c.utt_id == utt_id), None)
        return None


def plan(inputs: NightInputs, nights: list[KeyNight], policy: GatePolicy) -> Book:
    """Advance every alert of the night's decisions; a night decided late replays the nights
    after it (confirmations it changed can open or withdraw their alerts)."""
    book = Book.of(inputs, nights)
    night = inputs.nightly
    for k in [k for k in nights if k.nightly == night]:
        d = stored(k, inputs)
        tau = float(d.tau or policy.primary_tau)
        _infra(book, d)
        _withdraw(book, d, tau)
        _regression(book, d, tau, policy)
        for later in [x for x in nights if x.pair == k.pair and x.nightly > night]:
            ld = stored(later, inputs)
            _withdraw(book, ld, tau)
            _regression(book, ld, tau, policy)
    return book


def _commit_range(book: Book, d: StoredDecision, opened: dt.date) -> blocks.CommitRange | None:
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


def _withdraw(book: Book, d: StoredDecision, tau: float) -> None:
    """Resolve, with a note, an open alert whose opening night is no longer a confirmed
    REGRESSED (a backfilled night changed its series); never leave it silently open."""
    key = regression_key(d, tau)
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
    _member_closed(book, alert.alert_id, max(night, alert.last_nightly))
    ctx = messages.context(d, tau)
    parent = blocks.regression_withdrawn_parent(ctx, opened)
    book.enqueue(
        f"{key}|{opened}|withdrawn-update", alert.alert_id, "update", messages.msg(parent, "update")
    )
    reply = blocks.regression_withdrawn_reply(ctx, opened, why)
    book.enqueue(
        f"{key}|{opened}|withdrawn-reply", alert.alert_id, "reply", messages.msg(reply, "reply")
    )
    book.event("regression_withdrawn", d, f"withdrawn: {opened} no longer confirmed", key)
    book.moved("withdraw", alert.alert_id, d, key, why)


def _regression(book: Book, d: StoredDecision, tau: float, policy: GatePolicy) -> None:
    key = regression_key(d, tau)
    alert = book.open_alert(key)
    candidate = book.run(d.candidate_run_id)
    if candidate is not None and candidate.nightly != d.nightly:
        candidate = None
    commit = None if candidate is None else candidate.commit_sha
    ctx = messages.context(d, tau)
    if alert is None:
        if d.verdict == "REGRESSED" and d.confirmed:  # unconfirmed: dashboards only
            _open(book, d, key, ctx, commit, policy)
        return
    if d.verdict == "INFRA" or d.nightly <= alert.last_nightly:
        return  # INFRA never moves an alert; an earlier or the same night was already planned
    if d.verdict == "REGRESSED":
        _still_regressed(book, d, key, ctx, commit, alert)
    else:
        _quiet_night(book, d, key, ctx, alert, policy)


def _open(
    book: Book,
    d: StoredDecision,
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
        ref = (night, d.candidate_branch, d.baseline_branch, d.variant)
        book.opened_on[alert_id] = ref
        book.ops[-1] = dataclasses.replace(book.ops[-1], opener=ref)
    book.members[alert_id] = GroupMemberRow(
        book.alerts[alert_id], d.series, d.candidate_branch, d.baseline_branch
    )
    ctx = dataclasses.replace(
        ctx,
        commits=_commit_range(book, d, night),
        alert_id=alert_id,
        next_steps=messages.next_steps(d, alert_id),
    )
    confirm_p = policy.for_benchmark(d.benchmark).confirm_p
    ctx = dataclasses.replace(ctx, group_id=_join(book, alert_id, d, ctx, confirm_p))
    message = blocks.regression_opened(ctx)
    candidate = book.run(d.candidate_run_id)
    if candidate is not None and candidate.nightly == night:
        message = dataclasses.replace(
            message, blocks=[*message.blocks, messages.reproduce(candidate)]
        )
    book.enqueue(f"{key}|{night}|open", alert_id, "post", messages.msg(message, "post"))
    for utt, side, uri in _top_audio(book, d):
        book.enqueue(
            f"{key}|{night}|audio|{utt}" + ("|baseline" if side == "baseline" else ""),
            alert_id,
            "upload",
            {"op": "upload", "file": uri, "title": f"{utt}: {side} {d.branch(side)} ({night})"},
        )
    book.event("regression_opened", d, blocks.headline(ctx), key)
    book.moved("open", alert_id, d, key)


def _top_audio(book: Book, d: StoredDecision) -> list[tuple[str, str, str]]:
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
    nights = len(book.verdicts_since(d, day_before, night))
    commits = {c for c in [*alert.details.commits, commit] if c is not None}
    book.touch(alert.alert_id, night, sorted(commits))
    opened = str(alert.opened_nightly)
    ctx = dataclasses.replace(
        ctx,
        commits=_commit_range(book, d, alert.opened_nightly),
        alert_id=alert.alert_id,
        next_steps=messages.next_steps(d, alert.alert_id),
    )
    parent = messages.msg(blocks.regression_parent(ctx, opened, nights), "update")
    update = messages.with_status(parent, alert.details)
    book.enqueue(f"{key}|{night}|update", alert.alert_id, "update", update)
    reply = messages.msg(blocks.regression_still(ctx), "reply")
    book.enqueue(f"{key}|{night}|reply", alert.alert_id, "reply", reply)
    book.moved("still", alert.alert_id, d, key)


def _quiet_night(
    book: Book,
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
    recent = [k for k in book.verdicts_since(d, alert.last_nightly, night) if k.verdict != "INFRA"]
    quiet = 1 if recent else 0  # non-REGRESSED nights in a row, up to tonight
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
        shown = rule_out([t for t in tables if t is not None], pol)
        ruled_out = shown.ruled_out or all(k.verdict == "IMPROVED" for k in last)
    floor = shown.floor if shown else pol.min_effect
    high = shown.high if shown else None
    if not (window and ruled_out):
        held = blocks.regression_held(ctx, d.verdict, quiet, needed, high, floor)
        book.enqueue(f"{key}|{night}|held", alert.alert_id, "reply", messages.msg(held, "reply"))
        book.moved("held", alert.alert_id, d, key, f"{quiet} of {needed} quiet nights")
        return
    book.resolve(alert.alert_id, night)
    _member_closed(book, alert.alert_id, night)
    opened = str(alert.opened_nightly)
    parent = messages.msg(blocks.regression_resolved_parent(ctx, opened), "update")
    book.enqueue(f"{key}|{night}|resolve-update", alert.alert_id, "update", parent)
    reply = messages.msg(blocks.regression_resolved_reply(ctx, quiet, high, floor), "reply")
    book.enqueue(f"{key}|{night}|resolve-reply", alert.alert_id, "reply", reply)
    book.event("regression_resolved", d, f"resolved: {blocks.headline(ctx)}", key)
    book.moved("resolve", alert.alert_id, d, key)


def _infra(book: Book, d: StoredDecision) -> None:
    key = infra_key(d)
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
            book.enqueue(f"{key}|{night}|open", alert_id, "post", messages.msg(post, "post"))
            book.moved("infra", alert_id, d, key, "opened")
        elif night > alert.last_nightly:
            book.touch(alert.alert_id, night)
            reply = messages.msg(blocks.infra(f"still {title}", reasons), "reply")
            book.enqueue(f"{key}|{night}|reply", alert.alert_id, "reply", reply)
            book.moved("infra", alert.alert_id, d, key, "still")
    elif alert is not None and night > alert.last_nightly:
        book.resolve(alert.alert_id, night)
        done = (
            f"INFRA cleared on {night}: {d.candidate_branch} vs {d.baseline_branch} "
            f"({d.variant}) was decided again (verdict {d.verdict})"
        )
        reply = messages.msg(blocks.infra_resolved(done), "reply")
        book.enqueue(f"{key}|{night}|resolve-reply", alert.alert_id, "reply", reply)
        book.moved("infra", alert.alert_id, d, key, "cleared")


# ---------------------------------------------------------------- groups
def _join(
    book: Book, alert_id: int, d: StoredDecision, ctx: AlertContext, confirm_p: float
) -> int | None:
    """Record a newly opened regression alert's range and put it in its group: the pair's
    group whose nights overlap, else a new one with another lone alert that overlaps. Returns
    the group's id (None: it stands alone, for now)."""
    night = d.nightly
    r = ctx.commits
    range_to = dt.date.fromisoformat(r.first_bad_night) if r is not None else night
    range_from = (
        dt.date.fromisoformat(r.last_good_night)
        if r is not None and r.last_good_night is not None
        else range_to - dt.timedelta(days=1)
    )
    cand, base = d.candidate_branch, d.baseline_branch
    delay = book.inputs.settings.triage_delay_s
    ends = AlertDetails(
        summary=messages.member_line(ctx, confirm_p),
        last_good=None if r is None else r.last_good,
        first_bad=None if r is None else r.first_bad,
    )
    row = book.alerts[alert_id]
    book.update(
        alert_id,
        range_from=range_from,
        range_to=range_to,
        details=dataclasses.replace(
            row.details, summary=ends.summary, last_good=ends.last_good, first_bad=ends.first_bad
        ),
    )
    book.ops.append(
        AlertOp(
            "member_range",
            alert_id,
            details=ends,
            range_from=range_from,
            range_to=range_to,
            delay_s=delay,
        )
    )
    group = _group_for_range(book, cand, base, range_from, range_to)
    if group is None:
        other = _lone_for_range(book, alert_id, cand, base, range_from, range_to)
        if other is None or other.range_from is None or other.range_to is None:
            return None  # the query matches ranges that overlap: a lone one has its range
        last = max(range_to, other.range_to)
        key = keys.group(cand, base, str(last))
        group_id = book.insert(key, "group", night, AlertDetails())
        book.update(group_id, range_from=min(range_from, other.range_from), range_to=last)
        book.ops[-1] = dataclasses.replace(
            book.ops[-1], range_from=min(range_from, other.range_from), range_to=last
        )
        book.groups[group_id] = Group(book.alerts[group_id], [], False)
        _join_group(book, group_id, other.alert_id, night, other.range_from, other.range_to, delay)
        _join_group(book, group_id, alert_id, night, range_from, range_to, delay)
        _group_event(book, group_id, key, night, "group_opened", f"alert group {group_id} formed")
        book.enqueue(f"{key}|post", group_id, "post", messages.group_payload(_view(book, group_id)))
        book.groups[group_id].pending_post = True
        return group_id
    group_id, key = group.alert_id, group.alert_key
    reopened = group.state != "open"
    _join_group(book, group_id, alert_id, night, range_from, range_to, delay)
    view = _view(book, group_id)
    # The pending parent rewritten, else the delivered one updated with a reply naming the
    # new member.
    payload = messages.group_payload(view)
    if not _replace_pending_post(book, group_id, payload):
        book.enqueue(f"{key}|members-{len(view.members)}", group_id, "update", payload)
        said = "reopened: a new member joined" if reopened else "a new member joined"
        m = view.members[-1]
        reply = blocks.note(f"{said}: alert {m.alert_id} {m.series}: {m.line}")
        book.enqueue(f"{key}|joined-{alert_id}", group_id, "reply", messages.msg(reply, "reply"))
    if reopened:
        _group_event(
            book, group_id, key, night, "group_reopened", f"alert group {group_id} reopened"
        )
    return group_id


def _overlaps(a: StoredAlert, range_from: dt.date, range_to: dt.date) -> bool:
    return (
        a.range_from is not None
        and a.range_to is not None
        and a.range_from < range_to
        and range_from < a.range_to
    )


def _newest_open_first(rows: list[StoredAlert]) -> StoredAlert | None:
    return min(rows, key=lambda a: (a.state != "open", -a.alert_id), default=None)


def _group_for_range(
    book: Book, cand: str, base: str, range_from: dt.date, range_to: dt.date
) -> StoredAlert | None:
    """The group whose nights overlap (range_from, range_to] (open groups first)."""
    return _newest_open_first(
        [
            g.row
            for g in book.groups.values()
            if g.row.alert_key.split("|")[1:3] == [cand, base]
            and _overlaps(g.row, range_from, range_to)
        ]
    )


def _lone_for_range(
    book: Book, alert_id: int, cand: str, base: str, range_from: dt.date, range_to: dt.date
) -> StoredAlert | None:
    """Another regression alert of the pair (another series or variant), in no group yet,
    whose nights overlap."""
    own = book.alerts[alert_id].alert_key
    return _newest_open_first(
        [
            a
            for m in book.members.values()
            if (a := book.alerts[m.alert.alert_id]).kind == "regression"
            and a.group_id is None
            and a.alert_key != own
            and a.alert_key.split("|")[3:5] == [cand, base]
            and _overlaps(a, range_from, range_to)
        ]
    )


def _join_group(
    book: Book,
    group_id: int,
    member_id: int,
    night: dt.date,
    range_from: dt.date,
    range_to: dt.date,
    delay: int,
) -> None:
    g = book.alerts[group_id]
    book.update(
        group_id,
        range_from=min(g.range_from or range_from, range_from),
        range_to=max(g.range_to or range_to, range_to),
        last_nightly=max(g.last_nightly, night),
        state="open",
        resolved_nightly=None,
    )
    book.update(member_id, group_id=group_id)
    members = book.groups[group_id].members
    members[:] = sorted({*members, member_id})
    book.ops.append(
        AlertOp(
            "join",
            member_id,
            nightly=night,
            range_from=range_from,
            range_to=range_to,
            delay_s=delay,
            group_id=group_id,
        )
    )


def _view(book: Book, group_id: int) -> blocks.GroupView:
    group = book.groups[group_id]
    rows = [book.members[m] for m in group.members]
    return messages.group_view(book.alerts[group_id], rows)


def _replace_pending_post(book: Book, group_id: int, payload: JsonObject) -> bool:
    """Rewrite a group's opening post while it is still pending; False once it is sent."""
    if not book.groups[group_id].pending_post:
        return False
    key = book.alerts[group_id].alert_key
    for i, m in enumerate(book.messages):
        if m.idempotency_key == f"{key}|post":
            book.messages[i] = dataclasses.replace(m, payload=payload)
            break
    else:
        book.rewrites.append(PostRewrite(group_id, payload))
    return True


def _member_closed(book: Book, alert_id: int, night: dt.date) -> None:
    """A member recovered or was withdrawn: the group's message shows it, and the group
    closes when it was the last open member."""
    group_id = book.alerts[alert_id].group_id
    if group_id is None or group_id not in book.groups:
        return
    group = book.alerts[group_id]
    view = _view(book, group_id)
    closes = group.state == "open" and not any(m.open for m in view.members)
    key = group.alert_key
    if closes:
        book.resolve(group_id, night)
        view = _view(book, group_id)
        _group_event(
            book, group_id, key, night, "group_resolved", f"alert group {group_id} resolved"
        )
    payload = messages.group_payload(view)
    if _replace_pending_post(book, group_id, payload):
        return
    book.enqueue(f"{key}|closed-{alert_id}-{night}", group_id, "update", payload)
    if closes:
        text = f"resolved on {night}: all {len(view.members)} members recovered or were closed"
        reply = messages.msg(blocks.note(text), "reply")
        book.enqueue(f"{key}|resolved-{night}", group_id, "reply", reply)


def _group_event(book: Book, group_id: int, key: str, night: dt.date, kind: str, text: str) -> None:
    _, candidate, _baseline, _ = key.split("|")
    book.events.append(
        Event(
            time=dt.datetime.combine(night, dt.time(12), dt.UTC),
            kind=kind,
            benchmark=None,
            branch=candidate,
            variant=None,
            text=text,
            tags=["alert_group", kind, candidate],
            details={"alert_key": key, "group_id": group_id},
            dedup_key=f"{kind}|{group_id}|{night}",
        )
    )
