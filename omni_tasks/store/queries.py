"""Named SQL statements kept as plain files in ``sql/queries``."""

from __future__ import annotations

from functools import cache

from omni_tasks.config import SQL_DIR


@cache
def sql(name: str) -> str:
    path = SQL_DIR / "queries" / f"{name}.sql"
    return path.read_text(encoding="utf-8")
