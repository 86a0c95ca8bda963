"""What changed in a ledger between two readings (the last report or digest, and now): the
items that joined the chronic set and those that were fixed, and the chronic set by mode. Pure:
the report's section, the weekly Slack digest and the CLI read the same `Digest`."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass

from omni_tasks.formatting import pct
from omni_tasks.ledger.model import Ledger, LedgerItem

# The states a person counts as "broken every night" (new is chronic since a night).
CHRONIC = ("chronic", "new")
NO_MODE = "unknown"  # an item whose broken nights named no failure mode


@dataclass(frozen=True)
class Digest:
    """A series' branch now, and what changed since an earlier reading of it."""

    series_key: str
    branch: str
    first_night: dt.date
    last_night: dt.date
    since: dt.date | None  # the earlier reading's last night (None: there was none)
    chronic: tuple[LedgerItem, ...]
    flaky: int
    joined: tuple[LedgerItem, ...]  # chronic now, not chronic then
    fixed: tuple[LedgerItem, ...]  # fixed now, not fixed then

    @property
    def by_mode(self) -> dict[str, int]:
        return by_mode(self.chronic)


def mode_of(item: LedgerItem) -> str:
    return item.mode or NO_MODE


def by_mode(items: tuple[LedgerItem, ...] | list[LedgerItem]) -> dict[str, int]:
    """Items per failure mode, most first (ties by name, so the order is stable)."""
    counts = Counter(mode_of(i) for i in items)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def digest(now: Ledger, before: Ledger | None) -> Digest:
    """`now` against `before` (the same series and branch read at an earlier night): with no
    earlier reading, every chronic item joined and every fixed one is news."""
    was_chronic = {i.utt_id for i in before.state(*CHRONIC)} if before else set()
    was_fixed = {i.utt_id for i in before.state("fixed")} if before else set()
    chronic = tuple(sorted(now.state(*CHRONIC), key=lambda i: (mode_of(i), i.utt_id)))
    fixed = sorted(now.state("fixed"), key=lambda i: i.utt_id)
    return Digest(
        series_key=now.series_key,
        branch=now.branch,
        first_night=now.first_night,
        last_night=now.last_night,
        since=before.last_night if before else None,
        chronic=chronic,
        flaky=len(now.state("flaky")),
        joined=tuple(i for i in chronic if i.utt_id not in was_chronic),
        fixed=tuple(i for i in fixed if i.utt_id not in was_fixed),
    )


def commit_range(item: LedgerItem) -> str:
    """An item's range as `abc1234..def5678` (`?` for an end the ledger could not name)."""
    if item.commit_range is None:
        return "no range"
    a, b = item.commit_range
    return f"{(a or '?')[:12]}..{(b or '?')[:12]}"


def rate(item: LedgerItem) -> str:
    """`12/14 (86 % [60 %, 98 %])`: the count, its rate and the rate's exact interval."""
    if not item.nights:
        return "no nights"
    interval = f"[{pct(item.low, 0)}, {pct(item.high, 0)}]"
    return f"{item.broken}/{item.nights} ({pct(item.rate, 0)} {interval})"


def headline(d: Digest) -> str:
    """One line: the chronic set by mode, and what changed since the earlier reading."""
    modes = ", ".join(f"{n} {m}" for m, n in d.by_mode.items()) or "none"
    line = f"{len(d.chronic)} chronic ({modes}), {d.flaky} flaky"
    if d.since is not None:
        line += f"; since {d.since}: {len(d.joined)} joined, {len(d.fixed)} fixed"
    return line
