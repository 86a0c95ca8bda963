"""`existing`: an interpreter path managed by someone else; nothing is built."""

from __future__ import annotations

from pathlib import Path

from omni_tasks.environments import Environment, EnvironmentBuildError
from omni_tasks.trust import sandbox
from omni_tasks.trust.child_env import child_env


class ExistingStrategy:
    name = "existing"

    def __init__(self, python: str) -> None:
        self.python = python

    def prepare(self, commit: str) -> Environment:
        if not Path(self.python).is_file():
            raise EnvironmentBuildError(f"existing environment: no interpreter at {self.python}")
        # The interpreter is the environment's own (a .pth there runs on start): sandboxed.
        freeze = sandbox.run(
            [self.python, "-m", "pip", "freeze"],
            child_env(),
            sandbox.Paths(readable=sandbox.interpreter_roots(self.python)),
            timeout=120,
        )
        return Environment(commit, self.name, python=self.python, lock=freeze.stdout or None)
