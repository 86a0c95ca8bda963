"""The ledger's plain data: one item's nights in, its state and evidence out."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ItemNight:
    """One item on one night of one series and branch, as the stored rows say."""

    nightly: dt.date
    commit_sha: str | None
    broken: bool
    mode: str | None = None  # failure mode (analysis/failure_modes.diagnose), None if fine
    origin: str | None = None  # thinker | talker | None
    leak: bool = False  # the task text spoken aloud


@dataclass(frozen=True)
class LedgerItem:
    """One item's standing on a series' branch over the ledger's window."""

    utt_id: str
    # chronic: the broken rate's lower bound is above the policy's level over enough nights;
    # flaky: broken at times, not chronic; fixed: chronic before, lower after by an exact test;
    # new: chronic since a night (with the range it started in); clean: none of these.
    state: str
    broken: int
    nights: int
    low: float  # exact interval of the broken rate
    high: float
    # The defaults are a never-broken item's.
    first_broken: dt.date | None = None
    last_broken: dt.date | None = None
    mode: str | None = None  # dominant failure mode over its broken nights
    origin: str | None = None
    leak_share: float = 0.0  # share of its broken nights that spoke the task text
    since: dt.date | None = None  # new: the first chronic night
    # fixed: (last bad commit, first good commit); new: (last good, first bad)
    commit_range: tuple[str | None, str | None] | None = None
    groups: dict[str, str] = field(default_factory=dict)  # e.g. {"kind": "question"}
    elsewhere: tuple[str, ...] = ()  # other series (models, lanes) where it is chronic

    @property
    def rate(self) -> float:
        return self.broken / self.nights if self.nights else 0.0


@dataclass(frozen=True)
class GroupShare:
    """A group's share of the chronic set against its share of the suite, with the exact
    (hypergeometric) p that the chronic set holds that many or more of it by chance."""

    key: str  # e.g. "kind"
    value: str  # e.g. "question"
    chronic: int
    chronic_total: int
    suite: int
    suite_total: int
    p: float


@dataclass(frozen=True)
class Ledger:
    """A series' branch over a window of nights: every item's standing, the groups' shares,
    and what joined or was fixed since `since` (the last report or digest)."""

    series_key: str
    benchmark: str
    branch: str
    first_night: dt.date
    last_night: dt.date
    items: tuple[LedgerItem, ...]
    groups: tuple[GroupShare, ...] = ()

    def state(self, *states: str) -> list[LedgerItem]:
        return [i for i in self.items if i.state in states]
