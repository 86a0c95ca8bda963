"""The standing-failure ledger in and out of the results DB.

Incremental: each graded night of a series' branch is read once (its run's newest complete
grading, the clip records the night itself read) into `omni.item_night`, one small row per
item; a ledger over a window then reads the window's item rows, never clip records, so its
cost follows the window, not the history. A night is read again only when its run, grading
or tau changed (a re-grade). The states are the pure `ledger.states.classify`'s; loading a
ledger stores its last night's states for the Grafana panels (`omni.v_ledger_chronic`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from omni_tasks.ledger.groups import item_groups, shares
from omni_tasks.ledger.model import ItemNight, Ledger, LedgerItem
from omni_tasks.ledger.states import LedgerPolicy, classify, clean, outcome
from omni_tasks.series import Series
from omni_tasks.store.db import one
from omni_tasks.store.queries import sql
from omni_tasks.store.runs import clip_records


@dataclass(frozen=True)
class NightRead:
    """A night of a series' branch as the ledger reads it: its run and grading."""

    nightly: dt.date
    run_id: int
    grading_id: int
    commit_sha: str | None


Groups = dict[str, dict[str, str]]  # utt_id -> the item's groups
Window = list[tuple[NightRead, int]]  # the window's nights, oldest first, and their ledger ids


def load(
    conn: psycopg.Connection[Any],
    series: Series,
    *,
    branch: str,
    nights: int,
    until: dt.date | None = None,
    policy: LedgerPolicy | None = None,
) -> Ledger:
    """The ledger of a series' branch over its last `nights` nights (up to `until`, else the
    last stored night): every item's standing, the groups' shares and where else each item is
    chronic. Reads any night of the window not read yet; stores the last night's states."""
    policy = policy or LedgerPolicy()
    groups = _groups(conn, series)
    window = _window(conn, series, branch, nights, until, policy.tau, groups)
    if not window:
        raise LookupError(f"{series.label} {branch}: no graded night up to {until or 'now'}")
    rows = _item_rows(conn, window, None)
    counts = conn.execute(sql("ledger_item_counts"), {"night_ids": [i for _, i in window]})
    last = window[-1][0].nightly
    elsewhere = _elsewhere(conn, series, branch, last)

    def standing(u: str, n: int) -> LedgerItem:
        g = groups.get(u)
        item = classify(u, rows[u], policy, g) if u in rows else clean(u, n, policy, g)
        return replace(item, elsewhere=elsewhere[u]) if u in elsewhere else item

    items = tuple(standing(u, n) for u, n in sorted((r["utt_id"], r["nights"]) for r in counts))
    _write_states(conn, window[-1][1], items)
    return Ledger(
        series_key=series.key,
        benchmark=series.benchmark,
        branch=branch,
        first_night=window[0][0].nightly,
        last_night=last,
        items=items,
        groups=shares(items),
    )


def series_for(
    conn: psycopg.Connection[Any],
    benchmark: str,
    *,
    model: str | None = None,
    lane: str | None = None,
) -> list[Series]:
    """The stored series of a benchmark, filtered by model and lane when given."""
    args = {"benchmark": benchmark, "model": model, "lane": lane}
    return [Series.of(r) for r in conn.execute(sql("ledger_series"), args)]


def item_nights(
    conn: psycopg.Connection[Any],
    series: Series,
    *,
    branch: str,
    utt_id: str,
    nights: int,
    policy: LedgerPolicy | None = None,
) -> list[ItemNight]:
    """One item's nights over the branch's last `nights` nights, oldest first (the nights it
    did not count on, infra, are left out)."""
    tau = (policy or LedgerPolicy()).tau
    window = _window(conn, series, branch, nights, None, tau, _groups(conn, series))
    return _item_rows(conn, window, utt_id).get(utt_id, [])


def _window(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    nights: int,
    until: dt.date | None,
    tau: float,
    groups: Groups,
) -> Window:
    """The window's nights, oldest first, each read into the ledger's rows if it is not yet
    (or was read from another run, grading or tau); the newest night read brings the items'
    `groups` up to date (in place)."""
    args = {**series.args(), "branch": branch, "nights": nights, "until": until}
    found = conn.execute(sql("ledger_runs"), args).fetchall()
    out = []
    for i, r in enumerate(reversed(found)):  # newest first: it carries the items' groups
        night = NightRead(r["nightly"], r["run_id"], r["grading_id"], r["commit_sha"])
        night_id = r["night_id"]
        recorded = (r["recorded_run_id"], r["recorded_grading_id"], r["recorded_tau"])
        if recorded != (night.run_id, night.grading_id, tau):
            known = groups if i == 0 else None
            night_id = record_night(conn, series, branch, night, tau, known)
        out.append((night, int(night_id)))
    return out[::-1]


def _groups(conn: psycopg.Connection[Any], series: Series) -> Groups:
    found = conn.execute(sql("ledger_groups"), series.args()).fetchall()
    return {r["utt_id"]: r["groups"] for r in found}


def record_night(
    conn: psycopg.Connection[Any],
    series: Series,
    branch: str,
    night: NightRead,
    tau: float,
    known: Groups | None = None,
) -> int:
    """Read one night's run and grading into the ledger: one item row per item that counted.
    With the items' `known` groups (the newest night's reading), the groups that changed are
    stored. Returns its ledger night's id."""
    args = {**series.args(), **asdict(night), "branch": branch, "tau": tau}
    night_id = int(one(conn.execute(sql("ledger_record_night"), args))["night_id"])
    conn.execute(sql("ledger_clear_items"), {"night_id": night_id})
    clips = clip_records(conn, night.grading_id)
    with conn.cursor() as cur, cur.copy(sql("copy_item_night")) as cp:
        for clip in clips:
            if (o := outcome(clip, tau)) is not None:
                cp.write_row((night_id, clip.utt_id, *o))
    if known is not None:
        changed = {c.utt_id: g for c in clips if known.get(c.utt_id) != (g := item_groups(c))}
        known.update(changed)
        if changed:  # the first night, or a changed suite: most nights store nothing
            conn.execute(
                sql("ledger_upsert_items"),
                {
                    **series.args(),
                    "utt_ids": list(changed),
                    "groups": [Jsonb(g) for g in changed.values()],
                },
            )
    return night_id


def _item_rows(
    conn: psycopg.Connection[Any], window: Window, utt_id: str | None
) -> dict[str, list[ItemNight]]:
    """Each item's nights of the window, oldest first: of the one item, if given, else of the
    items broken on one of them."""
    order = {night_id: (i, night) for i, (night, night_id) in enumerate(window)}
    args = {"night_ids": list(order), "utt_id": utt_id}
    query = sql("ledger_item_rows" if utt_id is None else "ledger_one_item_rows")
    with conn.cursor(row_factory=psycopg.rows.tuple_row) as cur:
        found = cur.execute(query, args).fetchall()
    found.sort(key=lambda r: order[r[0]][0])  # stable: night order within each item
    out: dict[str, list[ItemNight]] = {}
    for night_id, utt, broken, mode, origin, leak in found:
        night = order[night_id][1]
        out.setdefault(utt, []).append(
            ItemNight(night.nightly, night.commit_sha, broken, mode, origin, leak)
        )
    return out


def _elsewhere(
    conn: psycopg.Connection[Any], series: Series, branch: str, until: dt.date
) -> dict[str, tuple[str, ...]]:
    """Per item, the other series of the benchmark (their keys) where it is chronic, each as
    its newest ledger up to `until` read it."""
    args = {**series.args(), "branch": branch, "until": until}
    out: dict[str, list[str]] = {}
    for r in conn.execute(sql("ledger_elsewhere"), args):
        other = Series(series.benchmark, r["model"], r["lane"])
        out.setdefault(r["utt_id"], []).append(other.key)
    return {u: tuple(sorted(keys)) for u, keys in out.items()}


def _write_states(
    conn: psycopg.Connection[Any], night_id: int, items: Sequence[LedgerItem]
) -> None:
    """A ledger night's states of the items that are not clean, replacing what was stored."""
    conn.execute(sql("ledger_clear_states"), {"night_id": night_id})
    kept = [i for i in items if i.state != "clean"]
    conn.execute(
        sql("ledger_write_states"),
        {
            "night_id": night_id,
            "utt_ids": [i.utt_id for i in kept],
            "states": [i.state for i in kept],
            "modes": [i.mode for i in kept],
        },
    )
