"""A benchmark's chronic items of one failure mode as a GitHub issue, and what to do to the
issue each time the ledger is read again (pure: jobs/ledger_issues.py talks to GitHub).

Like PyTorch's flaky-test bot: one issue per (benchmark, mode); a comment when an item joins or
a new series (model, lane) shows it; closed with its evidence once every item it tracked has
been clean for `clean_nights` nights; reopened when one returns. The issue's body carries the
set it tracks in a marker (an HTML comment GitHub does not show), so a second reading with the
same set edits the body in place and never files a second issue."""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import json
import re
from dataclasses import dataclass, field
from typing import Literal

from omni_tasks.formatting import pct
from omni_tasks.ledger.digest import CHRONIC, commit_range, mode_of, rate
from omni_tasks.ledger.model import Ledger, LedgerItem
from omni_tasks.series import Series
from omni_tasks.trust.redact import github_markdown

LABEL = "standing-failure"
MARKER = "omni-tasks-ledger"
_MARKED = re.compile(r"<!-- " + MARKER + r" (\{[^\n]*\}) -->")
MAX_BODY = 65_000  # GitHub refuses an issue body over 65,536 characters
MAX_EVIDENCE = 30  # items whose transcripts the body quotes (the table lists every one)
MAX_TRANSCRIPT = 600
Op = Literal["create", "edit", "comment", "close", "reopen"]


@dataclass(frozen=True)
class Evidence:
    """An item's latest broken night: what it was asked to say, what was heard, the audio."""

    series: str  # the label of the series it was heard on
    nightly: dt.date
    reference: str | None
    heard: str | None
    audio_url: str | None = None


@dataclass(frozen=True)
class Entry:
    """One chronic item of an issue: its standing on the series it was broken on last, the
    series where it is chronic, and its evidence."""

    item: LedgerItem
    series: str
    chronic_in: tuple[str, ...]
    evidence: Evidence | None = None


@dataclass(frozen=True)
class IssueSet:
    """A benchmark's chronic items of one mode on one branch, and every item's latest standing
    (`standing`: the series where it was broken last), for the clean-nights check."""

    benchmark: str
    branch: str
    mode: str
    last_night: dt.date
    entries: tuple[Entry, ...]
    standing: dict[str, tuple[str, LedgerItem]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        on = "" if self.branch == "main" else f" on {self.branch}"
        return f"Standing failures: {self.benchmark} · {self.mode}{on}"


@dataclass(frozen=True)
class Existing:
    """The issue GitHub holds for a (benchmark, mode)."""

    number: int
    open: bool
    body: str


@dataclass(frozen=True)
class Step:
    op: Op
    text: str = ""  # the body (create, edit) or the comment


@dataclass(frozen=True)
class Plan:
    issue: IssueSet
    number: int | None  # None: no issue yet
    steps: tuple[Step, ...]

    @property
    def summary(self) -> str:
        where = f"#{self.number}" if self.number is not None else "a new issue"
        did = ", ".join(s.op for s in self.steps) or "nothing to do"
        return f"{self.issue.title} ({_items(len(self.issue.entries))}): {where}: {did}"


def issue_sets(
    benchmark: str,
    branch: str,
    ledgers: list[tuple[str, Ledger]],
    also: set[str] | frozenset[str] = frozenset(),
    only: str | None = None,
) -> list[IssueSet]:
    """The chronic items of `ledgers` (label, ledger: the benchmark's series) per mode, and
    an empty set for each mode in `also` with none (its issue may close); `only` one mode."""
    standing: dict[str, tuple[str, LedgerItem]] = {}
    for label, ledger in ledgers:
        for item in ledger.items:
            seen = standing.get(item.utt_id)
            last = item.last_broken or dt.date.min
            if seen is None or last > (seen[1].last_broken or dt.date.min):
                standing[item.utt_id] = (label, item)
    chronic: dict[str, dict[str, Entry]] = {}
    for label, ledger in ledgers:
        for item in ledger.state(*CHRONIC):
            found = chronic.setdefault(mode_of(item), {})
            before = found.get(item.utt_id)
            where = {
                label,
                *map(series_label, item.elsewhere),
                *(before.chronic_in if before else ()),
            }
            first = before or Entry(item, label, ())
            found[item.utt_id] = Entry(first.item, first.series, tuple(sorted(where)))
    last = max((ledger.last_night for _, ledger in ledgers), default=dt.date.min)
    return [
        IssueSet(
            benchmark,
            branch,
            mode,
            last,
            tuple(e for _, e in sorted(chronic.get(mode, {}).items())),
            standing,
        )
        for mode in sorted({*also, *chronic})
        if only is None or mode == only
    ]


def fresh_elsewhere(ledgers: list[Ledger]) -> list[Ledger]:
    """The ledgers with each item's `elsewhere` (other series where it is chronic) answered
    by the other ledgers read here, which are newer than the states stored when it was read;
    series not read here keep what was stored."""
    read = {led.series_key for led in ledgers}
    chronic = {(led.series_key, i.utt_id) for led in ledgers for i in led.state(*CHRONIC)}

    def where(led: Ledger, item: LedgerItem) -> tuple[str, ...]:
        kept = {k for k in item.elsewhere if k not in read}
        now = {k for k in read if k != led.series_key and (k, item.utt_id) in chronic}
        return tuple(sorted(kept | now))

    return [
        dataclasses.replace(
            led, items=tuple(dataclasses.replace(i, elsewhere=where(led, i)) for i in led.items)
        )
        for led in ledgers
    ]


def series_label(name: str) -> str:
    """A series as people read it, from its key (`benchmark|model|lane`) or its label."""
    try:
        return Series.parse(name).label if "|" in name else name
    except ValueError:
        return name


def tracked(body: str) -> dict[str, list[str]] | None:
    """The item set an issue's body tracks (item → series where chronic), or None when the
    body carries no marker of ours."""
    doc = _marker(body)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, dict):
        return None
    return {str(k): [str(s) for s in v] for k, v in items.items() if isinstance(v, list)}


def marked_key(body: str) -> tuple[str, str, str] | None:
    """(benchmark, branch, mode) of the issue a body's marker names."""
    doc = _marker(body)
    if isinstance(doc, dict) and {"benchmark", "branch", "mode"} <= doc.keys():
        return str(doc["benchmark"]), str(doc["branch"]), str(doc["mode"])
    return None


def _marker(body: str) -> object:
    """The JSON document in a body's marker of ours; None without one (or unreadable)."""
    m = _MARKED.search(body)
    try:
        return None if m is None else json.loads(m.group(1))
    except ValueError:
        return None


def plan(issue: IssueSet, existing: Existing | None, clean_nights: int) -> Plan:
    """What to do to the (benchmark, mode)'s issue: file it when the set is new; comment on
    items that joined or series that newly show one; close it with the evidence once every
    item it tracked has been clean for `clean_nights` nights; reopen it when one returns; edit
    its body whenever it reads differently."""
    now = {e.item.utt_id: list(e.chronic_in) for e in issue.entries}
    before = (tracked(existing.body) or {}) if existing else {}
    gone = [u for u in before if u not in now]
    lingering = {u: before[u] for u in gone if not _clean(issue, u, clean_nights)}
    body = render(issue, {**lingering, **now}, lingering, clean_nights)
    if existing is None:
        return Plan(issue, None, (Step("create", body),) if now else ())
    steps: list[Step] = []
    if not now and not lingering:
        if existing.open:
            steps += [
                Step("edit", body),
                Step("comment", closing(issue, gone, clean_nights)),
                Step("close"),
            ]
        return Plan(issue, existing.number, tuple(steps))
    joined = [u for u in now if u not in before]
    wider = {u: sorted(set(now[u]) - set(before[u])) for u in now if u in before}
    if not existing.open and now:
        steps += [Step("reopen"), Step("comment", _returned(issue, list(now)))]
    elif joined or any(wider.values()):
        steps.append(Step("comment", _joined(issue, joined, wider)))
    if body != existing.body:
        steps.insert(0, Step("edit", body))
    return Plan(issue, existing.number, tuple(steps))


def _clean(issue: IssueSet, utt_id: str, clean_nights: int) -> bool:
    """Whether an item was broken on none of the last `clean_nights` nights of any series."""
    seen = issue.standing.get(utt_id)
    last = seen[1].last_broken if seen else None
    return last is None or (issue.last_night - last).days >= clean_nights


def _items(n: int) -> str:
    return f"{n} item{'' if n == 1 else 's'}"


def _code(text: str) -> str:
    """Data as a code span its backticks cannot close (and a table cell its pipes cannot
    split)."""
    return "`" + text.replace("`", "ˋ").replace("|", "\\|").replace("\n", " ") + "`"


def _fenced(text: str | None) -> str:
    """A transcript as a fenced block: nothing in it is markdown, mentions or links."""
    shown = (text or "(none)")[:MAX_TRANSCRIPT]
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", shown)), default=0))
    return f"{fence}text\n{shown}\n{fence}"


def _row(e: Entry) -> str:
    i = e.item
    where = ", ".join(_code(s) for s in e.chronic_in)
    cells = [
        _code(i.utt_id),
        rate(i),
        github_markdown(i.origin or "?"),
        pct(i.leak_share, 0),
        str(i.first_broken or "?"),
        str(i.since or ""),
        where,
    ]
    return "| " + " | ".join(cells) + " |"


def _evidence(e: Entry) -> str:
    ev = e.evidence
    if ev is None:
        return f"- {_code(e.item.utt_id)}: no stored transcripts of its latest broken night"
    audio = f"\n\n[Listen to the clip]({ev.audio_url})" if ev.audio_url else ""
    return (
        f"<details><summary><code>{html.escape(e.item.utt_id)}</code> · {ev.nightly} · "
        f"{html.escape(ev.series)}</summary>\n\nAsked to say (reference):\n\n"
        f"{_fenced(ev.reference)}\n\nHeard (ASR transcript):\n\n{_fenced(ev.heard)}{audio}"
        "\n\n</details>"
    )


def render(
    issue: IssueSet,
    items: dict[str, list[str]],
    lingering: dict[str, list[str]],
    clean_nights: int,
) -> str:
    """The issue body: the marker (the set it tracks), the chronic items' table, the items no
    longer chronic but not yet clean, and each chronic item's transcripts and audio."""
    doc = {"benchmark": issue.benchmark, "branch": issue.branch, "mode": issue.mode, "items": items}
    marker = f"<!-- {MARKER} {json.dumps(doc, sort_keys=True, separators=(',', ':'))} -->"
    head = (
        f"## {_items(len(issue.entries))} of {github_markdown(issue.benchmark)} broken night after "
        f"night in mode {_code(issue.mode)} on {_code(issue.branch)}\n\n"
        f"As of the {issue.last_night} nightly. An item is chronic when the lower bound of "
        "its broken rate's exact interval is above the ledger policy's level over enough "
        f"nights. This issue closes when every item has been clean for {clean_nights} nights "
        "and reopens when one returns (`omni-tasks items chronic --file-issue`)."
    )
    table = [
        "| item | broken nights (rate [95 %]) | origin | task text spoken | first broken "
        "| chronic since | chronic on |",
        "|---|---|---|---|---|---|---|",
        *(_row(e) for e in issue.entries),
    ]
    parts = [marker, head, "\n".join(table)]
    if lingering:
        parts.append(
            f"No longer chronic, not yet clean for {clean_nights} nights: "
            + ", ".join(_standing(issue, u) for u in sorted(lingering))
        )
    quoted = [_evidence(e) for e in issue.entries[:MAX_EVIDENCE]]
    if quoted:
        parts.append("### Latest broken night of each item\n\n" + "\n\n".join(quoted))
    if len(issue.entries) > MAX_EVIDENCE:
        parts.append(f"({len(issue.entries) - MAX_EVIDENCE} more items' transcripts left out)")
    return "\n\n".join(parts)[:MAX_BODY] + "\n"


def _standing(issue: IssueSet, utt_id: str) -> str:
    seen = issue.standing.get(utt_id)
    if seen is None:
        return f"{_code(utt_id)} (no longer in the suite)"
    label, item = seen
    fixed = f", fixed in {_code(commit_range(item))}" if item.state == "fixed" else ""
    last = item.last_broken or "?"
    return f"{_code(utt_id)} ({item.state} on {_code(label)}, last broken {last}{fixed})"


def closing(issue: IssueSet, items: list[str], clean_nights: int) -> str:
    """The evidence an issue closes with: each item it tracked, clean since when, and the
    commit range that fixed it where the ledger found one."""
    lines = [
        f"Every item is clean for at least {clean_nights} nights as of the {issue.last_night} "
        "nightly; closing. It reopens if one returns.",
        "",
        *(f"- {_standing(issue, u)}" for u in sorted(items)),
    ]
    return "\n".join(lines)


def _returned(issue: IssueSet, items: list[str]) -> str:
    return f"Reopened: chronic again as of the {issue.last_night} nightly: " + ", ".join(
        _code(u) for u in sorted(items)
    )


def _joined(issue: IssueSet, joined: list[str], wider: dict[str, list[str]]) -> str:
    lines = [f"As of the {issue.last_night} nightly:"]
    if joined:
        lines.append("- joined: " + ", ".join(_code(u) for u in sorted(joined)))
    lines += [
        f"- {_code(u)} is now chronic on " + ", ".join(_code(s) for s in series)
        for u, series in sorted(wider.items())
        if series
    ]
    return "\n".join(lines)
