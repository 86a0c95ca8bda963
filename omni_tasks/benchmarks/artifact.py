"""What every upstream results file shares, whichever benchmark wrote it: reading it safely,
the bounds its numbers must keep, its date, and the parsed run it becomes. Validation happens
before any write: a malformed file raises :class:`ArtifactError` naming the file and the
problem."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipAudio, ClipGrade, Execution, Grader, RunSpec
from omni_tasks.trust.names import InvalidName, check_name, check_text

# Documented bounds (docs/operators/security.md): a runaway clip scores WER in the tens or
# hundreds (more under whole-clip grading); nothing real comes near these.
MAX_WER = 1e5
MAX_COUNT = 1e9
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024
MAX_UTT_ID = 200


class ArtifactError(ValueError):
    """The artifact cannot be imported; the message names the file and the problem."""


@dataclass(frozen=True)
class ParsedArtifact:
    spec: RunSpec
    clips: list[ClipAudio]
    grades: list[ClipGrade]
    grader: Grader
    warnings: list[str] = field(default_factory=list)

    @property
    def has_clips(self) -> bool:
        return bool(self.clips)


@dataclass(frozen=True)
class Document:
    """An upstream results file, read and parsed: its bytes' digest and its top-level object."""

    path: Path
    sha256: str
    doc: dict[str, Any]  # typed by each parser's checks as it reads

    def source(self, fmt: str) -> JsonObject:
        return {"format": fmt, "file": self.path.name, "sha256": self.sha256}


def artifact_judge(grader_id: str, source: str, **more: str) -> Grader:
    """The grader of a family whose verdicts the artifact carries (upstream judged them)."""
    return Grader(grader_id, {"backend": "artifact", "source": source, **more})


def imported_spec(path: Path, benchmark: str, branch: str, **fields: Any) -> RunSpec:
    """The run an artifact imports as (trigger `import`), its names checked before anything
    is stored; `fields`: the rest of its RunSpec."""
    try:
        check_name(branch, "branch")
        check_name(benchmark, "benchmark")
    except InvalidName as exc:
        raise ArtifactError(f"{path}: {exc}") from None
    return RunSpec(benchmark=benchmark, branch=branch, trigger="import", **fields)


class HarnessSetup(TypedDict):
    """What a vLLM-Omni harness file says of how it ran, as the run's fields."""

    config: JsonObject  # the model
    execution: Execution  # the client concurrency


def harness_setup(document: Document) -> HarnessSetup:
    doc, execution = document.doc, Execution()
    if finite_number(doc.get("max_concurrency")):
        execution["client_concurrency"] = doc["max_concurrency"]
    model = doc.get("model_id")
    return {"config": {"model": model} if isinstance(model, str) else {}, "execution": execution}


def read_document(path: Path) -> Document:
    raw = read_regular(path)
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc})") from exc
    require(isinstance(doc, dict), path, "top level must be a JSON object")
    numbers_in_range(doc, path)
    return Document(path, hashlib.sha256(raw).hexdigest(), doc)


def nightly_of(
    doc: JsonObject, path: Path, nightly: dt.date | None, built: dt.date | None = None
) -> dt.date:
    """The night given, else the artifact's own `date`, else the day its CI build ran."""
    if nightly is not None:
        return nightly
    if "date" not in doc and built is not None:
        return built
    require("date" in doc, path, "missing key 'date' (or pass --nightly)")
    date = doc["date"]
    if not isinstance(date, str):
        raise ArtifactError(f"{path}: 'date' must be a string")
    try:
        return parse_artifact_date(date)
    except ValueError as exc:
        raise ArtifactError(f"{path}: 'date': {exc}") from None


# Nights an accuracy artifact can belong to; 9999-12-31 would overflow the gate's date
# arithmetic (a night plus one day) long after it was stored.
DATES = (dt.date(2000, 1, 1), dt.date(2100, 12, 31))


def parse_artifact_date(value: str) -> dt.date:
    """The harness writes ``YYYYmmdd-HHMMSS``; ISO dates and datetimes are accepted too; the
    night must lie within DATES."""
    if m := re.match(r"^(\d{8})(?:-\d{6})?$", value):
        day = dt.datetime.strptime(m.group(1), "%Y%m%d").date()
    else:
        try:
            day = dt.datetime.fromisoformat(value).date()
        except ValueError:
            raise ValueError(f"unrecognised date {value[:40]!r}") from None
    if not DATES[0] <= day <= DATES[1]:
        raise ValueError(f"{day} is outside {DATES[0]} – {DATES[1]}")
    return day


def require(cond: bool, path: Path, message: str) -> None:
    if not cond:
        raise ArtifactError(f"{path}: {message}")


def finite_number(v: Any, bound: float = MAX_COUNT) -> TypeGuard[int | float]:
    """A JSON number within ±bound (huge ints are compared as ints: no float overflow)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return abs(v) <= bound if isinstance(v, int) else math.isfinite(v) and abs(v) <= bound


def bounded_number(value: Any, low: float, high: float, path: Path, what: str) -> float:
    """`value` as a float when it is a JSON number in [low, high], else the error naming it."""
    require(
        finite_number(value) and low <= value <= high,
        path,
        f"{what} must be a number in [{low:g}, {high:g}]",
    )
    return float(value)


def numbers_in_range(doc: JsonObject, path: Path) -> None:
    """Refuse non-finite numbers (NaN, Infinity, 1e400) and numbers past the bounds anywhere
    in the summary: nothing is stored from such an artifact."""
    for k, v in doc.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and not finite_number(v):
            raise ArtifactError(
                f"{path}: {k!r} = {short_number(v)} is not finite or beyond ±{MAX_COUNT:g}"
            )


def short_number(v: int | float) -> str:
    text = repr(v) if isinstance(v, float) else str(v) if abs(v) < 10**30 else "a huge integer"
    return text[:40]


def check_item_text(item: JsonObject, key: str, path: Path, where: str) -> None:
    """Refuse NUL, control characters and lone surrogates in an item's texts."""
    value = item.get(key)
    if isinstance(value, str):
        try:
            check_text(value, f"{where} {key!r}", multiline=key not in ("utterance_id",))
        except InvalidName as exc:
            raise ArtifactError(f"{path}: {exc}") from None


# What an artifact says of itself, kept with its figures: who wrote it and how it was run.
IDENTITY_KEYS = (
    "model_id",
    "backend",
    "endpoint_type",
    "seed_tts_reference_as_input",
    "date",
    "max_concurrency",
)


def summary_figures(doc: JsonObject, prefix: str, items_key: str) -> JsonObject:
    """The artifact's own scalar figures under `prefix`, plus its identity (model, backend,
    endpoint type, reference-as-input), date and concurrency."""
    summary: JsonObject = {
        k: v
        for k, v in doc.items()
        if k.startswith(prefix) and k != items_key and (finite_number(v) or isinstance(v, str))
    }
    for k in IDENTITY_KEYS:
        if k in doc and (isinstance(doc[k], str) or finite_number(doc[k])):
            summary[k] = doc[k]
    return summary


def summary_mismatch(path: Path, mismatch: list[str]) -> list[str]:
    """The warning for an artifact whose own summary its items do not reproduce (or none)."""
    if not mismatch:
        return []
    return [
        f"{path}: the artifact's summary disagrees with its own items ("
        + "; ".join(mismatch)
        + "); the items are stored, the figures recomputed from them"
    ]


def read_regular(path: Path) -> bytes:
    """The artifact's bytes: a regular file only (not /dev/zero, a FIFO or a directory),
    within the size cap."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path}: not a regular file")
        if info.st_size > MAX_ARTIFACT_BYTES:
            raise ArtifactError(f"{path}: larger than {MAX_ARTIFACT_BYTES} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read: {exc.strerror}") from exc
