"""Execution environments: "give me a Python + server command for commit X".

Strategies (each a `prepare(commit) -> Environment`):
  venv      a virtualenv built on a bare GPU host from a git checkout + pinned requirements
  existing  an interpreter someone manages themselves
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omni_tasks.contracts import JsonObject


@dataclass(frozen=True)
class Environment:
    commit: str
    strategy: str
    python: str | None = None  # the interpreter that runs the server (venv, existing)
    lock: str | None = None  # what is installed (pip freeze), recorded on the run
    details: JsonObject = field(default_factory=dict)  # how the strategy built it


class EnvironmentBuildError(RuntimeError):
    """An environment that could not be prepared (the message says which step failed)."""
