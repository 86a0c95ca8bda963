"""What the family knows about an item, and each group's share of the chronic set against its
share of the suite (pure).

An item's groups are read from what its grade stores, never by asking which family it is: an
item whose family labels it (multiple choice: the question's task, category and duration, the
`breakdown` its grade carries) is grouped by those labels; an item read aloud (seed-TTS) by
question vs statement (the stored `is_question` flag) and a length bucket of its reference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from scipy.stats import hypergeom

from omni_tasks.ledger.digest import CHRONIC
from omni_tasks.ledger.model import GroupShare, LedgerItem
from omni_tasks.records import ClipRecord

# Reference length buckets in words (upper bounds, inclusive): seed-tts-eval's English
# sentences run from a few words to about forty.
LENGTH_BUCKETS = ((8, "short"), (16, "medium"))
LONG = "long"


def item_groups(clip: ClipRecord) -> dict[str, str]:
    """The item's groups: its family's labels where its grade stores them, else (an item
    read aloud) question vs statement and the length bucket of its reference."""
    if clip.breakdown:
        return {k: str(v) for k, v in sorted(clip.breakdown.items())}
    if not clip.reference_text:
        return {}
    words = len(clip.reference_text.split())
    return {
        "kind": "question" if clip.is_question else "statement",
        "length": next((name for top, name in LENGTH_BUCKETS if words <= top), LONG),
    }


def shares(items: Sequence[LedgerItem]) -> tuple[GroupShare, ...]:
    """Each group's count in the chronic set and in the suite (the ledger's items), with the
    exact one-sided p of drawing that many or more of it when the chronic set is a random
    draw from the suite (hypergeometric). Largest over-representation first."""
    suite = Counter((k, v) for i in items for k, v in i.groups.items())
    hit = Counter((k, v) for i in items if i.state in CHRONIC for k, v in i.groups.items())
    total = len(items)
    drawn = sum(1 for i in items if i.state in CHRONIC)
    out = [
        GroupShare(
            key=k,
            value=v,
            chronic=hit[(k, v)],
            chronic_total=drawn,
            suite=n,
            suite_total=total,
            p=float(hypergeom.sf(hit[(k, v)] - 1, total, n, drawn)) if drawn else 1.0,
        )
        for (k, v), n in sorted(suite.items())
    ]
    return tuple(sorted(out, key=lambda g: (g.p, g.key, g.value)))
