"""`venv`: a virtualenv per commit on a bare GPU host, cached by commit.

Built from a git checkout of the commit plus a pinned requirement spec; the `pip freeze` lock is
kept and recorded on the run. An environment is (vllm-omni commit, vLLM build): with a vLLM
build named (a version, or a commit of vLLM whose wheel lies in `vllm_index/<commit>/`, as
vLLM's per-commit wheel index lays them out) that build is installed last, over whatever the
checkout's dependencies brought, so one repository can change while the other stays fixed.
A finished environment has a READY marker (written last, so a crashed build is rebuilt, never
half-used); builds of one environment are serialized by a file lock.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from omni_tasks.environments import Environment, EnvironmentBuildError
from omni_tasks.trust import sandbox
from omni_tasks.trust.child_env import child_env
from omni_tasks.trust.commits import is_full_sha
from omni_tasks.trust.redact import redact
from omni_tasks.trust.sandbox import Paths, interpreter_roots

# A vLLM build: a version (0.27.0, 0.28.1rc1, 0.28.0+cu129) or a full commit SHA.
_VLLM_BUILD = re.compile(r"[0-9][0-9A-Za-z.+!_-]{0,63}|[0-9a-f]{40}")


def _run(argv: Sequence[str], what: str, paths: Paths, log: Path, timeout: float = 3600) -> str:
    """A build step: the checkout's build backend and the packages' are untrusted code, so it
    runs in the sandbox with the allow-listed environment. Its output goes to the build log,
    never into the error: the message names the step and where the log is."""
    out = sandbox.run(argv, child_env(), paths, timeout=timeout)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n{redact(out.stdout)}{redact(out.stderr)}\n")
    if out.returncode != 0:
        raise EnvironmentBuildError(f"{what} failed (exit {out.returncode}); build log: {log}")
    return out.stdout


class VenvStrategy:
    name = "venv"

    def __init__(
        self,
        repo: str,
        root: Path,
        requirements: Sequence[str] = (),
        base_python: str = sys.executable,
        pip_args: Sequence[str] = (),
        vllm: str | None = None,
        vllm_index: str | None = None,
    ) -> None:
        self.repo = repo
        self.root = root
        self.requirements = list(requirements)
        self.base_python = base_python
        self.pip_args = list(pip_args)
        if vllm is not None and not _VLLM_BUILD.fullmatch(vllm):
            raise EnvironmentBuildError(f"venv: vLLM build {vllm[:60]!r} is no version or SHA")
        if vllm is not None and vllm_index is None:
            raise EnvironmentBuildError("venv: a vLLM build needs environment.vllm_index")
        self.vllm = vllm
        self.vllm_index = vllm_index

    def path(self, commit: str) -> Path:
        """The environment's directory: named by the full SHA (and the vLLM build, when one is
        named: nothing else can name one) and checked to lie directly inside the root before
        anything there is written or removed."""
        if not is_full_sha(commit):
            raise EnvironmentBuildError(f"venv: {commit[:60]!r} is not a full commit SHA")
        root = self.root.resolve()
        name = commit if self.vllm is None else f"{commit}.vllm-{self.vllm}"
        env_dir = (root / name).resolve()
        if env_dir.parent != root:
            raise EnvironmentBuildError(f"venv: {env_dir} is not inside the env root {root}")
        return env_dir

    def prepare(self, commit: str) -> Environment:
        env_dir = self.path(commit)
        env_dir.parent.mkdir(parents=True, exist_ok=True)
        # One builder per environment across processes (released if the holder dies).
        with FileLock(env_dir.parent / f".{env_dir.name}.lock"):
            if not (env_dir / "READY").is_file():
                self._build(commit, env_dir)
            (env_dir / "READY").touch()  # last use, for pruning
        python = env_dir / "venv" / "bin" / "python"
        return Environment(
            commit,
            self.name,
            python=str(python),
            lock=(env_dir / "lock.txt").read_text(encoding="utf-8"),
            details={
                "path": str(env_dir),
                "repo": self.repo,
                "requirements": [*self.requirements],
                "vllm_build": self.vllm,
            },
        )

    def _vllm_install(self) -> list[str]:
        """pip arguments that install the named vLLM build from the index, alone: only the
        configured index is looked at (PyPI has vLLM releases of the same version). A
        commit's build is the wheel in `<index>/<commit>/` (a development version, so --pre)."""
        assert self.vllm is not None and self.vllm_index is not None
        index = self.vllm_index.rstrip("/")
        once = ["--no-deps", "--force-reinstall", "--no-index", "--only-binary", ":all:"]
        if not is_full_sha(self.vllm):
            return [*once, "--find-links", index, f"vllm=={self.vllm}"]
        where = f"{index}/{self.vllm}/"
        if not index.startswith(("http://", "https://")):
            wheels = sorted(Path(where).glob("vllm-*.whl"))
            if len(wheels) != 1:
                raise EnvironmentBuildError(
                    f"venv: expected one vllm wheel in {where}, found {len(wheels)}"
                )
            return [*once, str(wheels[0])]
        return [*once, "--pre", "--upgrade", "--find-links", where, "vllm"]

    def _build(self, commit: str, env_dir: Path) -> None:
        if env_dir.exists():
            shutil.rmtree(env_dir)  # a build that died half-way
        src = env_dir / "src"
        env_dir.mkdir(parents=True)
        log = self.build_log(commit)
        log.unlink(missing_ok=True)
        # The build writes only its own directory; it reads the repository, the interpreters
        # and a local vLLM index, nothing else of the worker's.
        local = [p for p in (self.repo, self.vllm_index) if p and "://" not in p]
        paths = Paths(
            readable=(*map(Path, local), *interpreter_roots(self.base_python)),
            writable=(env_dir,),
        )

        def step(argv: list[str], what: str) -> str:
            return _run(argv, what, paths, log)

        step(["git", "clone", "--quiet", "--no-checkout", self.repo, str(src)], "git clone")
        step(
            ["git", "-C", str(src), "checkout", "--quiet", "--detach", commit],
            f"git checkout {commit}",
        )
        step([self.base_python, "-m", "venv", str(env_dir / "venv")], "creating the virtualenv")
        pip = [
            str(env_dir / "venv" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            *self.pip_args,
            # The checkout's own vLLM pin resolves from the index too.
            *(["--find-links", self.vllm_index] if self.vllm_index else []),
        ]
        if self.requirements:  # wheels only: no package's build backend runs here
            step(
                [*pip, "--only-binary", ":all:", *self.requirements],
                "installing the pinned requirements",
            )
        step([*pip, str(src)], f"installing the checkout of {commit}")
        if self.vllm is not None:
            step([*pip, *self._vllm_install()], f"installing vLLM {self.vllm}")
        freeze = step([str(env_dir / "venv" / "bin" / "python"), "-m", "pip", "freeze"], "freeze")
        (env_dir / "lock.txt").write_text(freeze, encoding="utf-8")
        tmp = env_dir / "READY.tmp"
        tmp.write_text(commit, encoding="utf-8")
        tmp.replace(env_dir / "READY")

    def build_log(self, commit: str) -> Path:
        """Where a build's output is kept (beside the environment, so a failed build's log
        outlives the half-built directory)."""
        env_dir = self.path(commit)
        return env_dir.parent / "logs" / f"{env_dir.name}.build.log"
