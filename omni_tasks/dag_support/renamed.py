"""The DAGs renamed in 0.2.0 (docs/changelog.md): `seed_tts_*` became `omni_*`, since they run
every benchmark family. Airflow keys run history, task instances, XComs and task logs by dag_id
and cannot rename one, so for one release each old id is an alias: the same tasks, form and
defaults, never scheduled (an upgraded install, where the old DAG is unpaused, runs no second
night), paused when first created, tagged `deprecated`. Its runs, logs and the links already
sent keep working, and so does a script that triggers the old id. The table is
evidence.links.RENAMED (the links know the old ids too); the next release deletes it, this
module and its calls (docs/operators/upgrade.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from omni_tasks.evidence.links import RENAMED

if TYPE_CHECKING:
    from airflow.sdk import DAG


def with_alias(factory: Callable[[], DAG]) -> DAG:
    """Build the DAG an `@dag` function defines, and its alias under the old id (the same
    function called inside a DAG of the old id; the new DAG's arguments, less its schedule)."""
    from airflow.sdk import DAG

    new = factory()
    old = RENAMED[new.dag_id]
    note = (
        f"**Deprecated**: renamed `{new.dag_id}`; this alias keeps `{old}`'s history and "
        f"triggers working for one release and is never scheduled (docs/changelog.md).\n\n"
    )
    with DAG(
        old,
        schedule=None,
        is_paused_upon_creation=True,
        start_date=new.start_date,
        catchup=new.catchup,
        max_active_runs=new.max_active_runs,
        tags=[*sorted(new.tags), "deprecated"],
        params=copy.deepcopy(new.params),
        default_args=new.default_args,
        doc_md=note + (new.doc_md or ""),
    ):
        factory.__wrapped__()  # type: ignore[attr-defined]  # functools.wraps of @dag
    return new
