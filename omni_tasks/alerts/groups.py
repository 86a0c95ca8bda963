"""Alert groups (Chromeperf's): one rebase that breaks several series is one Slack thread.

A confirmed regression joins the group of its candidate/baseline pair whose range of nights
overlaps its own (last good night, first bad night]; every series runs the branch's head of a
night, so overlapping nights are overlapping commits. With no such group it starts one. A group
of one is its member's own alert; from its second member on, the group posts one parent
("rebase abc1234..def5678: 4 regressions in 3 series (2 models, 2 lanes)", a line per member)
and its members' messages go into its thread. Opening posts wait the triage delay
(`OMNI_ALERT_TRIAGE_DELAY_S`, restarted by each join) so that the night's other series can
join first. The group closes when every member has recovered or been closed by a person, and
reopens when a new member joins.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from omni_tasks.alerts import blocks, keys
from omni_tasks.alerts.blocks import AlertContext, GroupMember, GroupView
from omni_tasks.config import get_settings
from omni_tasks.contracts import AlertDetails, JsonObject, StoredDecision
from omni_tasks.formatting import pts_ci
from omni_tasks.series import Series
from omni_tasks.store import alerts as store


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
        else "confirmed by consecutive nights pooled"
    )
    variant = "" if ctx.variant == "default" else f" ({ctx.variant})"
    return f"{delta}{variant}, {how}, first bad night {ctx.nightly}"


def join(
    conn: psycopg.Connection[Any],
    alert_id: int,
    d: StoredDecision,
    ctx: AlertContext,
    confirm_p: float,
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
    delay = get_settings().alert_triage_delay_s
    line = member_line(ctx, confirm_p)
    ends = AlertDetails(
        summary=line,
        last_good=None if r is None else r.last_good,
        first_bad=None if r is None else r.first_bad,
    )
    store.set_member_range(conn, alert_id, range_from, range_to, delay, ends)
    group = store.group_for_range(conn, cand, base, range_from, range_to)
    if group is None:
        other = store.lone_regression_for_range(conn, alert_id, cand, base, range_from, range_to)
        if other is None or other.range_from is None or other.range_to is None:
            return None  # the query matches ranges that overlap: a lone one has its range
        last = max(range_to, other.range_to)
        key = keys.group(cand, base, str(last))
        group_id = store.insert_group(conn, key, night, min(range_from, other.range_from), last)
        store.join_group(
            conn, group_id, other.alert_id, night, other.range_from, other.range_to, delay
        )
        store.join_group(conn, group_id, alert_id, night, range_from, range_to, delay)
        _event(conn, group_id, key, night, "group_opened", f"alert group {group_id} formed")
        store.enqueue(conn, f"{key}|post", group_id, "post", _payload(_view(conn, group_id)))
        return group_id
    group_id, key = group.alert_id, group.alert_key
    store.join_group(conn, group_id, alert_id, night, range_from, range_to, delay)
    reopened = group.state != "open"
    view = _view(conn, group_id)
    # The pending parent rewritten, else the delivered one updated with a reply naming the
    # new member.
    payload = _payload(view)
    if not store.replace_pending_post(conn, group_id, payload):
        store.enqueue(conn, f"{key}|members-{len(view.members)}", group_id, "update", payload)
        said = "reopened: a new member joined" if reopened else "a new member joined"
        m = view.members[-1]
        reply = blocks.note(f"{said}: alert {m.alert_id} {m.series}: {m.line}")
        store.enqueue(
            conn,
            f"{key}|joined-{alert_id}",
            group_id,
            "reply",
            {"op": "reply", **reply.to_payload()},
        )
    if reopened:
        _event(conn, group_id, key, night, "group_reopened", f"alert group {group_id} reopened")
    return group_id


def member_closed(conn: psycopg.Connection[Any], alert_id: int, night: dt.date) -> None:
    """A member recovered, was withdrawn or closed by a person: the group's message shows it,
    and the group closes when it was the last open member."""
    route = store.alert_route(conn, alert_id)
    if route is None or route.group_id is None:
        return
    group_id = route.group_id
    group = store.alert_for_update(conn, group_id)
    if group is None:
        return
    view = _view(conn, group_id)
    closes = group.state == "open" and not any(m.open for m in view.members)
    key = group.alert_key
    if closes:
        store.resolve_alert(conn, group_id, night)
        view = _view(conn, group_id)
        _event(conn, group_id, key, night, "group_resolved", f"alert group {group_id} resolved")
    payload = _payload(view)
    if store.replace_pending_post(conn, group_id, payload):
        return
    store.enqueue(conn, f"{key}|closed-{alert_id}-{night}", group_id, "update", payload)
    if closes:
        text = f"resolved on {night}: all {len(view.members)} members recovered or were closed"
        store.enqueue(
            conn,
            f"{key}|resolved-{night}",
            group_id,
            "reply",
            {"op": "reply", **blocks.note(text).to_payload()},
        )


def of_night(conn: psycopg.Connection[Any], series: Series, nightly: dt.date) -> list[GroupView]:
    """The groups a series had a member in on a night, as their messages show them."""
    return [_view(conn, g) for g in store.groups_of_night(conn, series, nightly)]


def members(conn: psycopg.Connection[Any], group_id: int) -> list[dict[str, Any]]:
    """A group's member alerts (triage acts on each)."""
    return store.group_members(conn, group_id)


def _view(conn: psycopg.Connection[Any], group_id: int) -> GroupView:
    group = store.alert_for_update(conn, group_id)
    assert group is not None
    rows = store.group_members(conn, group_id)
    listed = tuple(
        GroupMember(
            alert_id=m["alert_id"],
            series=Series.of(m).label if m["benchmark"] else m["alert_key"],
            model=m["model"] or "",
            lane=m["lane"] or "",
            line=m["details"].summary or "",
            open=m["state"] == "open",
        )
        for m in rows
    )
    oldest = min(rows, key=lambda m: m["range_from"])
    newest = max(rows, key=lambda m: m["range_to"])
    ends = AlertDetails(
        last_good=oldest["details"].last_good, first_bad=newest["details"].first_bad
    )
    return GroupView(
        group_id=group_id,
        candidate=group.alert_key.split("|")[1],
        baseline=group.alert_key.split("|")[2],
        open=group.state == "open",
        first_bad_night=str(group.range_to),
        last_good_night=str(group.range_from),
        members=listed,
        last_good=ends.last_good,
        first_bad=ends.first_bad,
        next_steps=next_steps(group_id, rows, ends),
        buttons=get_settings().slack_signing_secret is not None,
    )


def next_steps(group_id: int, rows: list[dict[str, Any]], details: AlertDetails) -> tuple[str, ...]:
    """Own the group (every member at once), and bisect its range on its first series."""
    steps = [f"omni-tasks alerts ack {group_id} --note '…'"]
    first = next((m for m in rows if m["benchmark"]), None)
    if first is not None and details.last_good and details.first_bad:
        if details.last_good == details.first_bad:
            steps.append("the same commit at both ends: the change is not in the repository")
        else:
            s = Series.of(first)
            steps.append(
                f"omni-tasks bisect {details.last_good[:12]} {details.first_bad[:12]} "
                f"--target vllm-serve --benchmark {s.benchmark} --model {s.model} "
                f"--lane {s.lane} --branch {first['candidate_branch']} "
                f"--baseline {first['baseline_branch']}"
            )
    return tuple(steps)


def _payload(view: GroupView) -> JsonObject:
    return {"op": "post", **blocks.group_parent(view).to_payload()}


def _event(
    conn: psycopg.Connection[Any], group_id: int, key: str, night: dt.date, kind: str, text: str
) -> None:
    _, candidate, _baseline, _ = key.split("|")
    store.insert_event(
        conn,
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
