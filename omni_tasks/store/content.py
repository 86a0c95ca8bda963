"""A run's content hash: what it covers (the spec in canonical form, its clips and one
grading's grades) and, when a run key is written again with other content, what differs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omni_tasks.records import ClipAudio, ClipGrade, Grader, JsonObject, RunSpec

# Fields that say where/when a write happened, not what was measured.
_AUDIT_FIELDS = {"airflow_dag_id", "airflow_run_id"}
# Added with series: left out at their defaults, so a run stored before them keeps its hash.
_SERIES_FIELDS = {"model", "lane"}


def stable_hash(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _canonical_spec(spec: RunSpec) -> JsonObject:
    out: JsonObject = {}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if f.name in _AUDIT_FIELDS or (f.name in _SERIES_FIELDS and v == f.default):
            continue
        if isinstance(v, dt.datetime):
            v = v.astimezone(dt.UTC).isoformat()
        elif isinstance(v, dt.date):
            v = v.isoformat()
        out[f.name] = v
    return out


# Fields added after runs were stored: left out of the content hash while unset, so a run
# stored before them hashes as it always did.
_LATER_FIELDS = frozenset({"incorrect", "breakdown", "sim", "utmos", "finish_reason"})


def _canonical_rows(rows: Sequence[ClipAudio | ClipGrade]) -> dict[str, JsonObject]:
    # Clip rows are flat (scalars, and a str → str breakdown): a shallow read of their fields
    # hashes as `dataclasses.asdict` did, without its deep copy of every value.
    if not rows:
        return {}
    names = [f.name for f in dataclasses.fields(rows[0])]
    return {
        r.utt_id: {k: v for k in names if not ((v := getattr(r, k)) is None and k in _LATER_FIELDS)}
        for r in rows
    }


@dataclass(frozen=True)
class RunContent:
    """What a run's content hash covers: its spec (canonical), its clips by utterance, and the
    grader's id and grades when it is graded."""

    run: JsonObject
    clips: dict[str, JsonObject]
    grading: tuple[str, dict[str, JsonObject]] | None = None

    def to_json(self) -> JsonObject:
        """The document hashed (its layout is every stored hash's: never change it)."""
        doc: JsonObject = {"run": self.run, "clips": dict(self.clips)}
        if self.grading is not None:
            grader_id, grades = self.grading
            doc["grading"] = {"grader_id": grader_id, "clips": dict(grades)}
        return doc

    @property
    def digest(self) -> str:
        return stable_hash(self.to_json())


def content_of(
    spec: RunSpec, clips: list[ClipAudio], grading: tuple[Grader, list[ClipGrade]] | None
) -> RunContent:
    graded = None if grading is None else (grading[0].grader_id, _canonical_rows(grading[1]))
    return RunContent(_canonical_spec(spec), _canonical_rows(clips), graded)


def describe_difference(old: RunContent, new: RunContent) -> str:
    parts = []
    for key in sorted(set(old.run) | set(new.run)):
        if old.run.get(key) != new.run.get(key):
            parts.append(f"{key}: {old.run.get(key)!r} -> {new.run.get(key)!r}")
    old_id, old_grades = old.grading or (None, {})
    new_id, new_grades = new.grading or (None, {})
    if old_id != new_id:
        parts.append(f"grader_id: {old_id!r} -> {new_id!r}")
    for label, o, n in (("clips", old.clips, new.clips), ("grades", old_grades, new_grades)):
        if o != n:
            missing = sorted(set(o) - set(n))
            added = sorted(set(n) - set(o))
            changed = sorted(u for u in set(o) & set(n) if o[u] != n[u])
            detail = []
            if added:
                detail.append(f"{len(added)} new (e.g. {added[0]})")
            if missing:
                detail.append(f"{len(missing)} missing (e.g. {missing[0]})")
            if changed:
                u = changed[0]
                fields = [k for k in n[u] if o[u].get(k) != n[u].get(k)]
                detail.append(f"{len(changed)} changed (e.g. {u}: {', '.join(fields)})")
            parts.append(f"{label}: " + "; ".join(detail))
    return "; ".join(parts) or "content hash differs"
