"""What alert messages say, beyond the blocks themselves: a decision's context, links and next
steps, the reproduce line, a triage status line, a group's view. Pure functions of the
contracts (and the deployment's settings): the night's planner and triage both render with
them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import TYPE_CHECKING
from urllib.parse import quote

from pydantic import JsonValue
from slack_sdk.models.blocks import Block, ContextBlock, SectionBlock

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks
from omni_tasks.alerts.blocks import AlertContext, GroupMember, GroupView, Message
from omni_tasks.benchmarks.reproduce import Reproducible, reproduce_command
from omni_tasks.config import get_settings
from omni_tasks.contracts import AlertDetails, JsonObject, StoredAlert, StoredDecision, TriageEntry
from omni_tasks.contracts.night import Event, GroupMemberRow
from omni_tasks.contracts.rerun import SAME_MORNING
from omni_tasks.evidence.links import dashboard_path, report_url
from omni_tasks.formatting import pts_ci

if TYPE_CHECKING:
    from omni_tasks.records import NightRun

STATUS_BLOCK = "triage"


def msg(m: Message, op: str, **extra: JsonValue) -> JsonObject:
    """A message as the outbox keeps it."""
    return {"op": op, **m.to_payload(), **extra}


def next_steps(
    d: StoredDecision, alert_id: int, commits: blocks.CommitRange | None = None
) -> tuple[str, ...]:
    """What a triager runs next on a regression alert: own it, or mark it invalid, read the
    night's report of its series, and, given a commit range with both ends, bisect it."""
    s = d.series
    report = (
        f"omni-tasks report --benchmark {s.benchmark} --model {s.model} --lane {s.lane} "
        f"--nightly {d.nightly}"
    )
    steps = [*triage_steps(alert_id, AlertDetails()), report]
    if commits is not None and commits.last_good and commits.last_good != commits.first_bad:
        variant = "" if d.variant == "default" else f" --variant {d.variant}"
        steps.append(
            f"omni-tasks bisect {commits.last_good} {commits.first_bad} --target vllm-serve "
            f"--benchmark {s.benchmark} --model {s.model} --lane {s.lane} "
            f"--branch {d.candidate_branch} --baseline {d.baseline_branch}{variant} "
            f"--alert-id {alert_id}"
        )
    return tuple(steps)


# A person closed it (night_alerts.sql lists the same); `alerts reopen` undoes it.
CLOSING = ("invalid", "duplicate", "downstream", "ignored")
_TRIAGE_STEP = re.compile(r"`omni-tasks alerts (?:ack|invalid|reopen) \d+[^`]*`")
_NAMED = re.compile(r"^Next: \*(Alert|Group) (\d+)\*")


def triage_steps(alert_id: int, details: AlertDetails, group: bool = False) -> tuple[str, ...]:
    """The triage commands that apply to an alert now (each one a command that succeeds):
    `ack` until someone owns it, `invalid` while it is open (a group: each member's own),
    `reopen` once a person closed it."""
    history = details.triage.history if details.triage else []
    if history and history[-1].status in CLOSING:
        return (f"omni-tasks alerts reopen {alert_id}",)
    owned = any(e.status == "acknowledged" for e in _since_reopened(history))
    steps = [] if owned else [f"omni-tasks alerts ack {alert_id} --note '…'"]
    return tuple(steps if group else [*steps, f"omni-tasks alerts invalid {alert_id} --note '…'"])


def _since_reopened(history: list[TriageEntry]) -> list[TriageEntry]:
    """The triage entries after the newest `reopened` (all of them when never reopened)."""
    reopened = [i for i, e in enumerate(history) if e.status == "reopened"]
    return history[reopened[-1] + 1 :] if reopened else history


def _with_triage_steps(block: Block, details: AlertDetails) -> Block:
    """A `Next:` line with the triage commands that apply now (alert ids in it unchanged)."""
    text = block.text.text if isinstance(block, SectionBlock) and block.text else ""
    named = _NAMED.match(text)
    if named is None:
        return block
    parts = [p for p in text.split(" · ") if not _TRIAGE_STEP.fullmatch(p)]
    steps = triage_steps(int(named[2]), details, group=named[1] == "Group")
    now = " · ".join([parts[0], *map(blocks.code, steps), *parts[1:]])
    return block if now == text else blocks.section(now)


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


def context(d: StoredDecision, tau: float) -> AlertContext:
    bench = benchmarks.get(d.benchmark)
    return AlertContext(
        series=d.series,  # model and lane always: two series never read alike
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
        words=bench.words,
        buttons=get_settings().slack_signing_secret is not None,
        same_morning=next((r for r in d.reasons if r.startswith(SAME_MORNING)), None),
    )


def reproduce(run: NightRun) -> ContextBlock:
    """A context block with the command that reproduces the candidate's run."""
    command = reproduce_command(Reproducible.of_run(run), run.grader)
    return blocks.context(f"Reproduce the candidate's run: {blocks.code(command)}")


# ---------------------------------------------------------------- triage status
def status_line(entry: TriageEntry) -> str:
    """The parent message's status line for a triage entry (data escaped)."""
    what = entry.status.capitalize() + (f" of alert #{entry.of}" if entry.of is not None else "")
    text = f"*{what}* by {blocks.escape(entry.by)}, {entry.at[:16]} UTC"
    if entry.note:
        text += f": {blocks.escape(entry.note)}"
    if entry.link:
        text += f" · {blocks.link(entry.link, 'linked issue')}"
    return text


def current_entry(history: list[TriageEntry]) -> TriageEntry:
    """The newest action, carrying the newest note and link given since the alert last
    reopened: a second `ack` without `--note` keeps what the first one said, and says who said
    it (a note is never shown under another person's name)."""
    since = _since_reopened(history)
    newest = history[-1]
    noted = next((e for e in reversed(since) if e.note), None)
    note = newest.note
    if note is None and noted is not None:
        note = noted.note if noted.by == newest.by else f"{noted.note} (noted by {noted.by})"
    link = next((e.link for e in reversed(since) if e.link), None)
    return dataclasses.replace(newest, note=note, link=newest.link or link)


def with_status(payload: JsonObject, details: AlertDetails) -> JsonObject:
    """A parent payload carrying the alert's current triage status line (or none), its
    `Next:` line offering the triage commands that apply now."""
    shown = [
        _with_triage_steps(b, details)
        for b in blocks.parse_blocks(payload)
        if b.block_id != STATUS_BLOCK
    ]
    history = details.triage.history if details.triage else []
    if history and history[-1].status != "reopened":
        line = blocks.context(status_line(current_entry(history)), block_id=STATUS_BLOCK)
        shown.insert(1 if shown else 0, line)
    return {**payload, **Message(str(payload.get("text", "")), shown).to_payload()}


# ---------------------------------------------------------------- groups
def member_line(ctx: AlertContext, confirm_p: float) -> str:
    """What the group's message says of one member: Δ with its interval, confirmed how."""
    c = ctx.comparison
    delta = (
        "no paired table"
        if c is None
        else f"Δ {pts_ci(c.delta_tail_fraction, c.delta_tail_fraction_ci)}"
    )
    one_night = ctx.p_holm is not None and ctx.p_holm < confirm_p
    how = (
        f"confirmed on one night (Holm p={ctx.p_holm:.1e})"
        if one_night
        else SAME_MORNING
        if ctx.same_morning
        else "confirmed by consecutive nights pooled"
    )
    variant = "" if ctx.variant == "default" else f" ({ctx.variant})"
    return f"{delta}{variant}, {how}, first bad night {ctx.nightly}"


def group_view(group: StoredAlert, rows: list[GroupMemberRow]) -> GroupView:
    """A group as its parent message shows it, from its row and its members (oldest first)."""
    listed = tuple(
        GroupMember(
            alert_id=m.alert.alert_id,
            series=m.series.label if m.series else m.alert.alert_key,
            model=m.series.model if m.series else "",
            lane=m.series.lane if m.series else "",
            line=m.alert.details.summary or "",
            open=m.alert.state == "open",
        )
        for m in rows
    )
    # The oldest member's range starts the group's; a member whose step may precede every
    # night it fitted has no last good commit, and then neither has the group (its stored
    # range_from, a day before, only bounds the overlap of ranges: no run is known there).
    oldest = min(
        rows,
        key=lambda m: (
            m.alert.range_from or group.range_from or group.opened_nightly,
            m.alert.details.last_good is None,
        ),
    )
    newest = max(rows, key=lambda m: m.alert.range_to or group.range_to or group.opened_nightly)
    ends = AlertDetails(
        last_good=oldest.alert.details.last_good, first_bad=newest.alert.details.first_bad
    )
    return GroupView(
        group_id=group.alert_id,
        candidate=group.alert_key.split("|")[1],
        baseline=group.alert_key.split("|")[2],
        open=group.state == "open",
        first_bad_night=str(group.range_to),
        last_good_night=None if ends.last_good is None else str(group.range_from),
        members=listed,
        last_good=ends.last_good,
        first_bad=ends.first_bad,
        next_steps=group_next_steps(group.alert_id, rows, ends),
        buttons=get_settings().slack_signing_secret is not None,
    )


def group_next_steps(
    group_id: int, rows: list[GroupMemberRow], details: AlertDetails
) -> tuple[str, ...]:
    """Own the group (every member at once), and bisect its range on its first series."""
    steps = list(triage_steps(group_id, AlertDetails(), group=True))
    first = next((m for m in rows if m.series is not None), None)
    if first is not None and first.series is not None and details.last_good and details.first_bad:
        if details.last_good == details.first_bad:
            steps.append("the same commit at both ends: the change is not in the repository")
        else:
            s = first.series
            steps.append(
                f"omni-tasks bisect {details.last_good[:12]} {details.first_bad[:12]} "
                f"--target vllm-serve --benchmark {s.benchmark} --model {s.model} "
                f"--lane {s.lane} --branch {first.candidate_branch} "
                f"--baseline {first.baseline_branch}"
            )
    return tuple(steps)


def group_payload(view: GroupView) -> JsonObject:
    return msg(blocks.group_parent(view), "post")


def noon(night: dt.date) -> dt.datetime:
    """When a night's events are annotated (so a night planned twice dedups them)."""
    return dt.datetime.combine(night, dt.time(12), dt.UTC)


def group_event(group_id: int, key: str, night: dt.date, kind: str, text: str) -> Event:
    """An alert group's annotation (formed, reopened, resolved), once per group and night."""
    _, candidate, _baseline, _ = key.split("|")
    return Event(
        time=noon(night),
        kind=kind,
        benchmark=None,
        branch=candidate,
        variant=None,
        text=text,
        tags=["alert_group", kind, candidate],
        details={"alert_key": key, "group_id": group_id},
        dedup_key=f"{kind}|{group_id}|{night}",
    )
