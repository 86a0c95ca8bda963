"""Alert groups (Chromeperf's), planned: a confirmed regression joins the group of its
candidate/baseline pair whose range of nights overlaps its own (last good night, first bad
night]; with no such group it forms one with another lone alert of the pair that overlaps.
From its second member on, the group posts one parent and its members' messages go into its
thread; opening posts wait the triage delay so that the night's other series can join first.
The group closes when every member has recovered or been closed, and reopens when a new
member joins. Pure: changes a `Book`."""

from __future__ import annotations

import dataclasses
import datetime as dt

from omni_tasks.alerts import blocks, keys, messages
from omni_tasks.alerts.blocks import AlertContext
from omni_tasks.contracts import AlertDetails, JsonObject, StoredAlert, StoredDecision
from omni_tasks.contracts.night import AlertOp, PostRewrite
from omni_tasks.night.book import Book


def join(
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
    delay = book.inputs.triage_delay_s
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
        first = min(range_from, other.range_from)
        book.update(group_id, range_from=first, range_to=last)
        book.ops[-1] = dataclasses.replace(book.ops[-1], range_from=first, range_to=last)
        book.groups[group_id] = []
        _join_group(book, group_id, other.alert_id, night, other.range_from, other.range_to, delay)
        _join_group(book, group_id, alert_id, night, range_from, range_to, delay)
        _group_event(book, group_id, key, night, "group_opened", f"alert group {group_id} formed")
        book.enqueue(f"{key}|post", group_id, "post", messages.group_payload(_view(book, group_id)))
        book.pending_posts.add(group_id)
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
        book.say(f"{key}|joined-{alert_id}", group_id, "reply", reply)
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
            g
            for g in (book.alerts[i] for i in book.groups)
            if g.alert_key.split("|")[1:3] == [cand, base] and _overlaps(g, range_from, range_to)
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
    book.groups[group_id] = sorted({*book.groups[group_id], member_id})
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
    rows = [book.members[m] for m in book.groups[group_id]]
    return messages.group_view(book.alerts[group_id], rows)


def _replace_pending_post(book: Book, group_id: int, payload: JsonObject) -> bool:
    """Rewrite a group's opening post while it is still pending; False once it is sent."""
    if group_id not in book.pending_posts:
        return False
    key = book.alerts[group_id].alert_key
    for i, m in enumerate(book.messages):
        if m.idempotency_key == f"{key}|post":
            book.messages[i] = dataclasses.replace(m, payload=payload)
            break
    else:
        book.rewrites.append(PostRewrite(group_id, payload))
    return True


def member_closed(book: Book, alert_id: int, night: dt.date) -> None:
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
        book.say(f"{key}|resolved-{night}", group_id, "reply", blocks.note(text))


def _group_event(book: Book, group_id: int, key: str, night: dt.date, kind: str, text: str) -> None:
    book.events.append(messages.group_event(group_id, key, night, kind, text))
