"""The report's "Standing failures" section: a series' chronic set on its baseline branch as of
the report's night, and what joined it and what was fixed since the last report (the night
before: reports are nightly). Rows are plain data; the template escapes them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.ledger.digest import Digest, commit_range, digest, headline, mode_of, rate
from omni_tasks.ledger.issue import series_label
from omni_tasks.ledger.model import Ledger, LedgerItem
from omni_tasks.series import Series
from omni_tasks.store import ledger as store

WINDOW = 28  # nights the report's ledger reads
COLUMNS = {
    "utt_id": "item",
    "state": "state",
    "rate": "broken nights (rate [95 %])",
    "mode": "mode",
    "origin": "origin",
    "first": "first broken",
    "since": "chronic since",
    "elsewhere": "chronic elsewhere",
}


def row(item: LedgerItem) -> dict[str, str]:
    return {
        "utt_id": item.utt_id,
        "state": item.state,
        "rate": rate(item),
        "mode": mode_of(item),
        "origin": item.origin or "?",
        "first": str(item.first_broken or ""),
        "since": str(item.since or ""),
        "elsewhere": ", ".join(map(series_label, item.elsewhere)),
    }


@dataclass(frozen=True)
class Section:
    """One branch's standing failures as the template shows them."""

    branch: str
    window: str
    headline: str
    rows: list[dict[str, str]]
    joined: list[str]
    fixed: list[str]
    since: str | None


def section(d: Digest) -> Section:
    return Section(
        branch=d.branch,
        window=f"{d.first_night} – {d.last_night}",
        headline=headline(d),
        rows=[row(i) for i in d.chronic],
        joined=[f"{i.utt_id} ({mode_of(i)}, {rate(i)})" for i in d.joined],
        fixed=[f"{i.utt_id} (was {mode_of(i)}; fixed in {commit_range(i)})" for i in d.fixed],
        since=str(d.since) if d.since else None,
    )


def standing_failures(
    conn: psycopg.Connection[Any], series: Series, branches: set[str], nightly: dt.date
) -> list[Section]:
    """One section per branch (the night's baselines) with a graded night by `nightly`."""

    def load(branch: str, until: dt.date) -> Ledger | None:
        try:
            return store.load(conn, series, branch=branch, nights=WINDOW, until=until)
        except LookupError:  # no graded night of this branch by then: nothing stands
            return None

    out = []
    for branch in sorted(branches):
        if (now := load(branch, nightly)) is not None:
            out.append(section(digest(now, load(branch, now.last_night - dt.timedelta(1)))))
    return out
