"""`venv`: a virtualenv per commit on a bare GPU host, cached by commit.

Built from a git checkout of the commit plus a pinned requirement spec; the `pip freeze` lock is
kept and recorded on the run. A finished environment has a READY marker (written last, so a
crashed build is rebuilt, never half-used); builds of one commit are serialized by a file lock;
`prune` removes environments unused for longer than a given age.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from omni_tasks.commits import is_full_sha
from omni_tasks.environments import Environment, EnvironmentBuildError


def _run(argv: Sequence[str], what: str, cwd: Path | None = None, timeout: float = 3600) -> str:
    out = subprocess.run(
        list(argv), capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
    )
    if out.returncode != 0:
        raise EnvironmentBuildError(
            f"{what} failed ({out.returncode}): {out.stderr.strip()[-800:]}"
        )
    return out.stdout


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per environment across processes (released if the holder dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


class VenvStrategy:
    name = "venv"

    def __init__(
        self,
        repo: str,
        root: Path,
        requirements: Sequence[str] = (),
        base_python: str = sys.executable,
        pip_args: Sequence[str] = (),
    ) -> None:
        self.repo = repo
        self.root = root
        self.requirements = list(requirements)
        self.base_python = base_python
        self.pip_args = list(pip_args)

    def path(self, commit: str) -> Path:
        """The environment's directory: named by the full SHA (nothing else can name one) and
        checked to lie directly inside the root before anything there is written or removed."""
        if not is_full_sha(commit):
            raise EnvironmentBuildError(f"venv: {commit[:60]!r} is not a full commit SHA")
        root = self.root.resolve()
        env_dir = (root / commit).resolve()
        if env_dir.parent != root:
            raise EnvironmentBuildError(f"venv: {env_dir} is not inside the env root {root}")
        return env_dir

    def prepare(self, commit: str) -> Environment:
        env_dir = self.path(commit)
        with _locked(env_dir.parent / f".{commit}.lock"):
            if not (env_dir / "READY").is_file():
                self._build(commit, env_dir)
            (env_dir / "READY").touch()  # last use, for pruning
        python = env_dir / "venv" / "bin" / "python"
        return Environment(
            commit,
            self.name,
            python=str(python),
            lock=(env_dir / "lock.txt").read_text(encoding="utf-8"),
            details={"path": str(env_dir), "repo": self.repo, "requirements": self.requirements},
        )

    def _build(self, commit: str, env_dir: Path) -> None:
        if env_dir.exists():
            shutil.rmtree(env_dir)  # a build that died half-way
        src = env_dir / "src"
        env_dir.mkdir(parents=True)
        _run(["git", "clone", "--quiet", "--no-checkout", self.repo, str(src)], "git clone")
        _run(
            ["git", "-C", str(src), "checkout", "--quiet", "--detach", commit],
            f"git checkout {commit}",
        )
        _run([self.base_python, "-m", "venv", str(env_dir / "venv")], "creating the virtualenv")
        pip = [
            str(env_dir / "venv" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            *self.pip_args,
        ]
        if self.requirements:
            _run([*pip, *self.requirements], "installing the pinned requirements")
        _run([*pip, str(src)], f"installing the checkout of {commit}")
        freeze = _run([str(env_dir / "venv" / "bin" / "python"), "-m", "pip", "freeze"], "freeze")
        (env_dir / "lock.txt").write_text(freeze, encoding="utf-8")
        tmp = env_dir / "READY.tmp"
        tmp.write_text(commit, encoding="utf-8")
        tmp.replace(env_dir / "READY")

    def prune(self, max_age_days: float, now: float | None = None) -> list[Path]:
        """Remove environments not used for `max_age_days`; returns what was removed."""
        now = time.time() if now is None else now
        removed = []
        for ready in self.root.glob("*/READY"):
            if ready.parent.is_symlink() or not is_full_sha(ready.parent.name):
                continue  # not an environment of ours: never removed
            if now - ready.stat().st_mtime > max_age_days * 86400:
                with _locked(self.root / f".{ready.parent.name}.lock"):
                    shutil.rmtree(ready.parent)
                removed.append(ready.parent)
        return removed


def bin_dir(env: Environment) -> str | None:
    return None if env.python is None else os.path.dirname(env.python)
