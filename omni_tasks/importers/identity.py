"""Which series an artifact belongs to is decided by the job that wrote it (the rule) *and* by
the artifact's own fields, which must agree: upstream's shared runner writes
`qwen_omni_acc_seed_tts_<tag>.json` for every model, and a folder can hold a chat night and a
realtime night of the same suite. An artifact whose own model or protocol disagrees with a
rule's series is never relabelled: the next rule is tried, and with none left it is refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omni_tasks.series import Protocol


def protocol_of(summary: Mapping[str, Any]) -> Protocol | None:
    """The protocol an artifact was measured with, from its own fields (None: it does not
    say): `--seed-tts-reference-as-input`; a realtime backend or endpoint
    (`openai-realtime-tts`, `openai-realtime-chat`, `/v1/realtime`); else chat."""
    if summary.get("seed_tts_reference_as_input") is True:
        return "reference-as-input"
    said = " ".join(str(summary.get(k) or "") for k in ("backend", "endpoint_type")).strip()
    if not said:
        return None
    return "realtime" if "realtime" in said.lower() else "chat"


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
    if measured is not None and measured != protocol:
        backend = str(summary.get("backend") or summary.get("endpoint_type") or "")[:60]
        return f"it was measured over {measured} ({backend}), the rule's series over {protocol}"
    return None
