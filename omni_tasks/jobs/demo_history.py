"""The demo's week before: the nights before its first DAG night, stored (after it) so that
the standing-failure ledger (`omni-tasks items chronic`) has the `LedgerPolicy().min_nights` it
needs to call an item chronic. Each is the demo's own config and series, run in-process by the
nightly's own steps (jobs.nightly.record_heads, run_branch) in transcript mode: the simulator's
transcript, no audio to speak or grade, so a week costs seconds, not an Airflow night each.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from omni_tasks.deployment.night import resolve_night
from omni_tasks.jobs import nightly
from omni_tasks.ledger.states import LedgerPolicy
from omni_tasks.store import runs
from omni_tasks.store.db import connection
from omni_tasks.store.migrate import migrate

HISTORY_SEED = 1000  # the history's first seed: apart from the DAG nights' (42, 43, …)


def store_history(
    history: Path, first_night: dt.date, dsn: str, on_line: Callable[[str], None]
) -> None:
    """Store the `min_nights - 1` nights before `first_night` of every series and branch of
    the demo's config `history` (the DAG nights' run options in transcript mode), a new seed a
    night; a night a branch already has is skipped, so running the demo again adds nothing."""
    days = LedgerPolicy().min_nights - 1
    with connection(dsn) as conn:
        migrate(conn)
        for i in range(days):
            night = first_night - dt.timedelta(days=days - i)
            form: dict[str, object] = {"seeds": [HISTORY_SEED + i]}
            for params in resolve_night(form, str(history)).series:
                todo = [
                    b
                    for b in params.branches
                    if not runs.has_fresh_run(conn, params.series, b, night)
                ]
                if not todo:
                    continue
                params = params.model_copy(update={"branches": todo})
                on_line(f"history {night}: {', '.join(todo)} (seed {HISTORY_SEED + i}, transcript)")
                for plan in nightly.record_heads(conn, [params], night, backfill=True):
                    nightly.run_branch(conn, params, plan, trigger="backfill")
