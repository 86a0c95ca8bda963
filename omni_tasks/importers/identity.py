"""Which series an artifact belongs to is decided by the job that wrote it *and* by the
artifact's own fields, which must agree. The job decides through the artifact rules of
`buildkite_rules.yaml` (pipeline, step, path glob → benchmark, model, lane, protocol), each
checked when it is read. Upstream's shared runner writes `qwen_omni_acc_seed_tts_<tag>.json` for
every model, and a folder can hold a chat night and a realtime night of the same suite: an
artifact whose own model or protocol disagrees with a rule's series is never relabelled; the
next rule is tried, and with none left it is refused."""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omni_tasks import benchmarks
from omni_tasks.contracts import JsonObject
from omni_tasks.series import Protocol, Series

RULES = Path(__file__).resolve().parent / "buildkite_rules.yaml"
SLUG = r"^[a-z0-9][a-z0-9-]{0,99}$"  # a Buildkite pipeline slug (and a role's name)


class BuildkiteError(RuntimeError):
    """What stops a Buildkite import (or one artifact of it), said in the operator's terms."""


class ArtifactRule(BaseModel):
    """Artifacts of `pipeline` that a job of `step` uploaded under a path matching `artifact`
    are runs of this series (its lane filled in with the job's hardware)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pipeline: str = Field(pattern=SLUG)
    step: str = Field(min_length=1, max_length=300)  # the job's step key or label (fnmatch)
    artifact: str = Field(min_length=1, max_length=300)
    benchmark: str | None = None  # None: detected from the file
    model: str
    lane: str  # may hold `{sku}`: the job's hardware (importers/hardware.py), lower-cased
    expected: int | None = Field(None, ge=0, le=10**7)  # the suite's item count, when fixed
    protocol: Protocol = "chat"  # how the step's harness talks to the server
    blocking: bool = True  # false: the step is `grade: NonBlocking` / `soft_fail` upstream
    # The nights the step's harness spoke `protocol` (an artifact's own night; `until`
    # excluded): a step whose test moved protocol under the same backend name has a rule each.
    since: dt.date | None = None
    until: dt.date | None = None

    def in_force(self, night: dt.date) -> bool:
        return (self.since is None or self.since <= night) and (
            self.until is None or night < self.until
        )

    def matches(self, pipeline: str, path: str, job: JsonObject | None) -> bool:
        if pipeline != self.pipeline or not fnmatch.fnmatchcase(path, self.artifact):
            return False
        steps = (job or {}).get("step_key"), (job or {}).get("name"), (job or {}).get("label")
        return any(isinstance(s, str) and fnmatch.fnmatchcase(s, self.step) for s in steps)

    def lane_for(self, sku: str | None) -> str:
        """The lane of a job on `sku`; a lane that needs the hardware refuses a job that does
        not say it."""
        if "{sku}" not in self.lane:
            return self.lane
        if sku is None:
            raise BuildkiteError(
                f"its job names no hardware the rule's lane {self.lane} needs (no agent queue, "
                "pool or resource class that importers/hardware.py knows)"
            )
        return self.lane.replace("{sku}", sku.lower())


def load_rules(path: Path = RULES, slugs: Mapping[str, str] | None = None) -> list[ArtifactRule]:
    """The artifact rules of a rules file, each checked (its series must be a valid one), each
    naming its pipeline's slug: a rule's role resolved through the file's `pipelines:` (role →
    slug) with `slugs` over them (a deployment's own, e.g. AMD's)."""
    doc = _rules_doc(path)
    pipelines = _roles(path, doc, slugs)
    out = []
    for i, raw in enumerate(doc["rules"]):
        try:
            if not isinstance(raw, dict):
                raise ValueError("a mapping of rule fields")
            given = raw.get("pipeline")
            rule = ArtifactRule(**{**raw, "pipeline": pipelines.get(str(given), given)})
            if rule.benchmark is not None:
                benchmarks.get(rule.benchmark)
            Series(rule.benchmark or "seed_tts_en", rule.model, rule.lane_for("H100"))
        except (ValidationError, ValueError, benchmarks.UnknownBenchmark) as exc:
            raise BuildkiteError(f"{path}: rules[{i}]: {exc}") from None
        out.append(rule)
    return out


def pipeline_slugs(path: Path = RULES, slugs: Mapping[str, str] | None = None) -> dict[str, str]:
    """Role → slug: the rules file's `pipelines:` with `slugs` over them; a slug for a role the
    file does not name, or that is not a slug, is refused (a typo would import nothing)."""
    return _roles(path, _rules_doc(path), slugs)


def _roles(path: Path, doc: dict[str, Any], slugs: Mapping[str, str] | None) -> dict[str, str]:
    roles = doc.get("pipelines") or {}
    if not isinstance(roles, dict):
        raise BuildkiteError(f"{path}: `pipelines` must map roles to slugs")
    unknown = sorted(set(slugs or {}) - set(roles))
    if unknown:
        named = ", ".join(sorted(roles)) or "none"
        raise BuildkiteError(f"slugs: {path} has no pipeline role {unknown[0]!r} (it has {named})")
    out = {**roles, **(slugs or {})}
    for role, slug in out.items():
        if not (isinstance(slug, str) and re.fullmatch(SLUG, slug)):
            raise BuildkiteError(f"pipeline {str(role)[:50]}: {str(slug)[:100]!r} is not a slug")
    return out


def _rules_doc(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BuildkiteError(f"{path}: cannot read artifact rules: {exc}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("rules"), list)
    ):
        raise BuildkiteError(f"{path}: expected `version: 1` and a `rules` list")
    return doc


def protocol_of(summary: Mapping[str, Any]) -> Protocol | None:
    """The protocol an artifact was measured with, from its own fields (None: it does not
    say): `--seed-tts-reference-as-input`; native duplex (`openai-realtime-duplex`, an
    endpoint with `duplex=1`); another realtime backend or endpoint (`openai-realtime-tts`,
    `openai-realtime-chat`, `/v1/realtime`); the TTS-model speech backend
    (`openai-audio-speech`, `/v1/audio/speech`); else chat."""
    if summary.get("seed_tts_reference_as_input") is True:
        return "reference-as-input"
    said = " ".join(str(summary.get(k) or "") for k in ("backend", "endpoint_type")).strip()
    if not said:
        return None
    said = said.lower()
    if "audio-speech" in said or "audio/speech" in said:
        return "audio-speech"
    if "realtime-duplex" in said or "duplex=1" in said:
        return "realtime-duplex"
    return "realtime" if "realtime" in said else "chat"


# What a measured protocol may be a run of. `openai-realtime-tts` says realtime, not which: its
# test spoke explicit Realtime TTS until vllm-omni#7413 moved it to native duplex under the
# same backend name, so the step's rule (by its nights) decides.
AGREES: dict[Protocol, tuple[Protocol, ...]] = {"realtime": ("realtime", "realtime-duplex")}


def model_name(model: str) -> str:
    """A model's name without its organisation or local directory: `/data/models/MiniCPM-o-4_5`
    (upstream's MiniCPM-o test serves a local copy) and `openbmb/MiniCPM-o-4_5` are one model."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower()


def identity_problem(model: str, protocol: Protocol, summary: Mapping[str, Any]) -> str | None:
    """Why the artifact is not a run of the series (model, protocol); None when its own fields
    agree or do not say."""
    own = summary.get("model_id")
    if isinstance(own, str) and own and model_name(own) != model_name(model):
        return f"its model_id {own[:100]!r} is not the rule's model {model}"
    measured = protocol_of(summary)
    if measured is not None and protocol not in AGREES.get(measured, (measured,)):
        backend = str(summary.get("backend") or summary.get("endpoint_type") or "")[:60]
        return f"it was measured over {measured} ({backend}), the rule's series over {protocol}"
    return None
