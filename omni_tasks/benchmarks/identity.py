"""Run identity, one rule for every family: a run key names a run's series, night, branch,
commit, variant, seed and prompt; what else decides what it measures (target, mode, dataset
and subset, harness, model, lane) must agree when the key is run again. A re-run with other
inputs is refused, naming each difference, and never replaces the stored run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from omni_tasks.benchmarks.request import BenchError
from omni_tasks.records import RunSpec
from omni_tasks.series import DEFAULT_LANE
from omni_tasks.store import runs


def inputs(run: RunSpec, own: Mapping[str, str]) -> dict[str, object]:
    """What a re-run under the key must agree on (a launched server's URL is a fresh port each
    time: it counts as one); `own`: the family's own, by name, and the config key of each."""
    config = run.config
    return {
        "target": "a launched server" if run.stack.get("server_log") else config.get("target"),
        **{name: config.get(key) for name, key in own.items()},
        "dataset and subset (--dataset, --limit)": run.dataset_fingerprint,
        "prompt": run.prompt_fingerprint,
        "harness version": config.get("harness_version"),
        "model": config.get("model"),
        "lane": run.lane or DEFAULT_LANE,
    }


def _short(value: object) -> str:
    """A fingerprint as its head and what follows it (`c98b6e85…:first5`)."""
    head, colon, tail = str(value).partition(":")
    return f"{head[:8]}…{colon}{tail}" if isinstance(value, str) and len(head) > 24 else repr(value)


def differences(stored: RunSpec, spec: RunSpec, own: Mapping[str, str]) -> list[str]:
    new = inputs(spec, own)
    old = inputs(stored, own)
    if old["model"] is None:  # stored before runs recorded their model: not a difference
        new["model"] = None
    return [
        f"{k}: stored {_short(old[k])}, asked {_short(new[k])}" for k in old if old[k] != new[k]
    ]


def stored_status(
    conn: psycopg.Connection[Any], key: str, spec: RunSpec, own: Mapping[str, str] | None = None
) -> runs.StoredKey | None:
    """The stored run's status under `key` (None when there is none), once its inputs are
    checked to be the request's (`own`: what else the family's runs must agree on, by name,
    and its config key)."""
    existing = runs.run_key_status(conn, key)
    if existing is not None and (differs := differences(runs.get_run(conn, key), spec, own or {})):
        raise BenchError(
            f"run {key} is stored with other inputs ({'; '.join(differs)}); pass another "
            "--run-key (or --nightly/--variant) for a new run, or `runs delete` the old one"
        )
    return existing
