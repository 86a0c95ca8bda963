"""Thinker texts of two stacks, compared token by token (pure): where a regression starts.

The nightly's thinker is greedy, so on one clip two stacks whose thinkers agree give the same
text. The first differing token (whitespace-separated; the model's own tokenizer is not needed
to find where two texts part) and its position say that the thinker changed there; texts equal
on every clip put the regression after the thinker (the talker or code2wav)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ThinkerDiff:
    utt_id: str
    position: int | None  # the first differing token; None: equal (or a side has no text)
    baseline_token: str | None  # None past the end of that side's text
    candidate_token: str | None
    missing: bool = False  # a side's request failed: nothing compared


def first_difference(a: str, b: str) -> tuple[int, str | None, str | None] | None:
    """(position, a's token, b's token) where the token sequences first differ; None if equal."""
    pairs = enumerate(itertools.zip_longest(a.split(), b.split()))
    return next(((i, x, y) for i, (x, y) in pairs if x != y), None)


def compare_thinkers(
    baseline: Mapping[str, str | None], candidate: Mapping[str, str | None]
) -> list[ThinkerDiff]:
    out = []
    for u in sorted(set(baseline) & set(candidate)):
        a, b = baseline[u], candidate[u]
        if a is None or b is None:
            out.append(ThinkerDiff(u, None, None, None, missing=True))
            continue
        diff = first_difference(a, b)
        out.append(ThinkerDiff(u, *(diff or (None, None, None))))
    return out


def verdict(diffs: list[ThinkerDiff]) -> str:
    compared = [d for d in diffs if not d.missing]
    differ = [d for d in compared if d.position is not None]
    failed = len(diffs) - len(compared)
    tail = f" ({failed} clips had no thinker text on a side)" if failed else ""
    if not compared:
        return "thinker texts could not be compared" + tail
    if not differ:
        return (
            f"thinker texts equal on all {len(compared)} clips: the regression starts after "
            f"the thinker (talker or code2wav){tail}"
        )
    return (
        f"thinker texts differ on {len(differ)} of {len(compared)} clips: the thinker's output "
        f"changed{tail}"
    )
