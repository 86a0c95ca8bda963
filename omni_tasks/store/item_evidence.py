"""What a person reads of an item's broken night: the reference it was asked to say, the ASR
transcript of what was heard, and where its audio is (the ledger says which night)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from omni_tasks.series import Series
from omni_tasks.store.db import typed


@dataclass(frozen=True)
class ItemEvidence:
    utt_id: str
    nightly: dt.date
    reference: str | None
    heard: str | None  # the newest complete grading's transcript (None: not graded)
    audio_uri: str | None


def item_evidence(
    conn: psycopg.Connection[Any], series: Series, branch: str, nights: Mapping[str, dt.date]
) -> dict[str, ItemEvidence]:
    """Each item's clip on its night (`nights`: item → night) of the series' branch; an item
    with no stored clip that night is left out."""
    wanted = sorted(nights.items())
    rows = typed(
        conn,
        ItemEvidence,
        "item_evidence",
        **series.args(),
        branch=branch,
        utt_ids=[u for u, _ in wanted],
        nights=[n for _, n in wanted],
    )
    return {r.utt_id: r for r in rows}
