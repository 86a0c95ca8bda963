"""An item's state over a window of nights, by stated rules (pure; docs/users/ledger.md).

- **chronic**: the broken rate's exact lower bound (Jeffreys, `confidence` two-sided) is above
  `chronic_level`, over at least `min_nights` observed nights;
- **new**: chronic from a night on (at least `min_nights` from it, with the same bound), after
  at least `min_before` nights before it whose rate is lower by a one-sided exact test
  (Fisher's, p < `change_p`); `since` is that night, `commit_range` (last good, first bad);
- **fixed**: chronic before a night (the same bound over at least `min_nights`) and lower from
  it on (at least `min_before` nights, the same exact test); `commit_range` (last bad, first
  good);
- **flaky**: broken on some night, none of the above;
- **clean**: never broken in the window.

The change night is the split with the smallest exact p (the latest on a tie, nearest the
change): over one item's broken/fine nights that is the single-step fit the nightly's own
ranges use (analysis/change_point.py), and its ends move to the nearest nights that carry a
commit, as analysis/bisect.py's `bisect_range` moves them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.stats import beta, hypergeom

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.failure_modes import diagnose
from omni_tasks.ledger.model import ItemNight, LedgerItem
from omni_tasks.records import ClipRecord


@dataclass(frozen=True)
class LedgerPolicy:
    """The ledger's rules, one place (every figure a person reads is derived with these)."""

    chronic_level: float = 0.5  # a chronic item's rate is surely above this
    min_nights: int = 7  # nights a chronic stretch needs
    confidence: float = 0.95  # two-sided, of the Jeffreys interval
    change_p: float = 0.01  # one-sided exact p a fixed or new item's change needs
    min_before: int = 3  # nights on the other side of a change
    tau: float = 0.5  # a WER item is broken above it (the gate's primary tau)


@cache  # a window of n nights has at most (n + 1)² pairs: every item after the first is free
def jeffreys(broken: int, nights: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Jeffreys interval of broken/nights (Beta(k + ½, n − k + ½) quantiles; 0 and 1 at
    the ends, as Brown, Cai & DasGupta define it). (0, 1) with no nights."""
    if nights == 0:
        return 0.0, 1.0
    a = (1 - confidence) / 2
    low = 0.0 if broken == 0 else float(beta.ppf(a, broken + 0.5, nights - broken + 0.5))
    high = 1.0 if broken == nights else float(beta.ppf(1 - a, broken + 0.5, nights - broken + 0.5))
    return low, high


def is_chronic(broken: int, nights: int, policy: LedgerPolicy) -> bool:
    return (
        nights >= policy.min_nights
        and jeffreys(broken, nights, policy.confidence)[0] > policy.chronic_level
    )


def change_night(flags: Sequence[bool], policy: LedgerPolicy, *, down: bool) -> int | None:
    """The split s (nights[:s] before, nights[s:] after) where the rate steps down (`down`) or
    up with the smallest one-sided exact p, if p < change_p and the chronic side is chronic.
    Fisher's one-sided test of the 2×2 table is the hypergeometric tail of the broken count
    before the split, so every split is tested in one vectorised call."""
    n, k = len(flags), int(sum(flags))
    chronic, other = policy.min_nights, policy.min_before  # nights each side of a split needs
    lo, hi = (chronic, n - other) if down else (other, n - chronic)
    # The chronic side's best case is every broken night on it, over as few nights as allowed:
    # an item that could not be chronic even so needs no test (most items, and cheaply).
    if hi < lo or k == 0 or not is_chronic(k, max(k, policy.min_nights), policy):
        return None
    splits = np.arange(lo, hi + 1)
    before = np.cumsum(np.asarray(flags, dtype=int))[splits - 1]
    # down: P(X >= broken before) under no change; up: P(X <= broken before)
    p = hypergeom.sf(before - 1, n, k, splits) if down else hypergeom.cdf(before, n, k, splits)
    best = int(np.flatnonzero(p == p.min())[-1])
    s = int(splits[best])
    chronic_side = before[best] if down else k - before[best]
    chronic_n = s if down else n - s
    if p[best] >= policy.change_p or not is_chronic(int(chronic_side), chronic_n, policy):
        return None
    return s


def _commit_range(nights: Sequence[ItemNight], s: int) -> tuple[str | None, str | None]:
    """The commits either side of the change at split s: the newest night before it and the
    oldest from it that carry a commit."""
    before = next((n.commit_sha for n in reversed(nights[:s]) if n.commit_sha), None)
    after = next((n.commit_sha for n in nights[s:] if n.commit_sha), None)
    return before, after


def classify(
    utt_id: str,
    nights: Sequence[ItemNight],
    policy: LedgerPolicy,
    groups: Mapping[str, str] | None = None,
) -> LedgerItem:
    """One item's standing over its observed nights (oldest first), by the module's rules."""
    flags = [n.broken for n in nights]
    broken = [n for n in nights if n.broken]
    low, high = jeffreys(len(broken), len(nights), policy.confidence)
    state, since, commits = "clean" if not broken else "flaky", None, None
    if (s := change_night(flags, policy, down=True)) is not None:
        state, commits = "fixed", _commit_range(nights, s)
    elif (s := change_night(flags, policy, down=False)) is not None:
        state, since, commits = "new", nights[s].nightly, _commit_range(nights, s)
    elif is_chronic(len(broken), len(nights), policy):
        state = "chronic"
    return LedgerItem(
        utt_id=utt_id,
        state=state,
        broken=len(broken),
        nights=len(nights),
        low=low,
        high=high,
        first_broken=broken[0].nightly if broken else None,
        last_broken=broken[-1].nightly if broken else None,
        mode=_dominant([n.mode for n in broken]),
        origin=_dominant([n.origin for n in broken]),
        leak_share=sum(n.leak for n in broken) / len(broken) if broken else 0.0,
        since=since,
        commit_range=commits,
        groups=dict(groups or {}),
    )


def clean(
    utt_id: str, nights: int, policy: LedgerPolicy, groups: Mapping[str, str] | None = None
) -> LedgerItem:
    """An item never broken over its `nights` observed nights: what `classify` says of it,
    without its nights (most items; a ledger reads only the broken ones' nights)."""
    low, high = jeffreys(0, nights, policy.confidence)
    return LedgerItem(utt_id, "clean", 0, nights, low, high, groups=dict(groups or {}))


def _dominant(values: Sequence[str | None]) -> str | None:
    """The most common value (the first seen on a tie); None when none is known."""
    counts = Counter(v for v in values if v is not None)
    return max(counts, key=counts.__getitem__) if counts else None


# A choice item's broken night: the answer was wrong (it has no transcript to diagnose).
WRONG_ANSWER = "wrong_answer"


def outcome(clip: ClipRecord, tau: float) -> tuple[bool, str | None, str | None, bool] | None:
    """An item's night as the ledger keeps it: (broken, mode, origin, leak), or None when the
    item did not count that night (infra: transport, server or grader). A WER item's mode,
    origin and leak are `diagnose`'s; a choice item's mode is `wrong_answer`."""
    if count_of(clip) == "infra":
        return None
    if clip.incorrect is not None:
        wrong = is_broken(clip, tau)
        return wrong, WRONG_ANSWER if wrong else None, None, False
    d = diagnose(clip, tau)
    if d is None:
        return False, None, None, False
    return True, d.mode, d.origin, d.task_leak
