"""`existing`: an interpreter path managed by someone else; nothing is built."""

from __future__ import annotations

import subprocess
from pathlib import Path

from omni_tasks.environments import Environment, EnvironmentBuildError


class ExistingStrategy:
    name = "existing"

    def __init__(self, python: str) -> None:
        self.python = python

    def prepare(self, commit: str) -> Environment:
        if not Path(self.python).is_file():
            raise EnvironmentBuildError(f"existing environment: no interpreter at {self.python}")
        freeze = subprocess.run(
            [self.python, "-m", "pip", "freeze"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Environment(commit, self.name, python=self.python, lock=freeze.stdout or None)
