"""Launch a vLLM-Omni server for one model + deploy config in a given environment.

The command is an argument list (never a shell string), run in its own process group on the
given GPUs and a free loopback port; startup waits for the port and `/health` (or fails early
with the log's tail when the process exits); the log is kept with the run; teardown stops the
whole process group.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import tenacity
import yaml

from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.links import server_log_url
from omni_tasks.synthesis.provenance import (
    Provenance,
    commit_time,
    gpu_inventory,
    lineage,
    stack_versions,
)
from omni_tasks.synthesis.stages import MAX_BASE_DEPTH, merge_deploy
from omni_tasks.trust import sandbox
from omni_tasks.trust.child_env import child_env


class ServerStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class ServerSpec:
    python: str  # the environment's interpreter; its bin dir is searched for `vllm` first
    model: str
    log_path: Path
    startup_timeout_s: float  # the deployment config's server.startup_timeout_s
    deploy_config: Path | None = None
    deploy_overrides: JsonObject = field(default_factory=dict)  # merged into the yaml
    extra_args: tuple[str, ...] = ()
    gpus: tuple[int, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: str = "vllm"  # or "module": python -m vllm_omni.entrypoints.cli.main


@dataclass(frozen=True)
class RunningServer:
    url: str
    pid: int
    log_path: Path
    argv: list[str]


def server_env(spec: ServerSpec) -> dict[str, str]:
    """The server's (and the provenance probe's, so it sees the interpreter's packages as the
    server will) environment: the allow-listed basics plus the deployment config's `env`,
    never the worker's secrets (omni_tasks.trust.child_env)."""
    return child_env(spec.env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def effective_deploy_config(spec: ServerSpec) -> Path | None:
    """The deploy yaml with the variant's overrides merged in, written in a folder beside the
    log together with the files its `base_config` chain names, at the same relative places:
    vLLM-Omni (and `stages.read_deploy`) read a base next to the file that names it."""
    if spec.deploy_config is None and not spec.deploy_overrides:
        return None
    folder = spec.log_path.with_suffix(".deploy")
    folder.mkdir(parents=True, exist_ok=True)
    base: dict[str, Any] = {}
    name = "deploy.yaml"
    if spec.deploy_config is not None:
        base = yaml.safe_load(spec.deploy_config.read_text(encoding="utf-8")) or {}
        name = spec.deploy_config.name
        _copy_bases(spec.deploy_config, base, folder)
    path = folder / name
    path.write_text(yaml.safe_dump(merge_deploy(base, spec.deploy_overrides), sort_keys=False))
    return path


def _copy_bases(config: Path, doc: Any, folder: Path) -> None:
    """Copy the base files `config` names, each at its place relative to `config`; a base
    outside `config`'s folder is left for the reader to refuse (stages.read_deploy)."""
    here = Path()
    for _ in range(MAX_BASE_DEPTH):
        named = doc.get("base_config") if isinstance(doc, dict) else None
        if not isinstance(named, str):
            return
        here = Path(os.path.normpath(here.parent / named))
        if here.is_absolute() or here.parts[:1] == ("..",):
            return
        (folder / here).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config.parent / here, folder / here)
        doc = yaml.safe_load((folder / here).read_text(encoding="utf-8"))


def command(spec: ServerSpec, port: int) -> list[str]:
    if spec.entrypoint == "module":
        head = [spec.python, "-m", "vllm_omni.entrypoints.cli.main"]
    else:
        search = os.pathsep.join([str(Path(spec.python).parent), os.environ.get("PATH", "")])
        exe = shutil.which("vllm", path=search)
        if exe is None:
            raise ServerStartError(f"no `vllm` executable beside {spec.python} or on PATH")
        head = [exe]
    argv = [
        *head,
        "serve",
        spec.model,
        "--omni",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--stage-init-timeout",
        "600",
        "--init-timeout",
        "900",
        "--log-stats",
    ]
    deploy = effective_deploy_config(spec)
    if deploy is not None:
        argv += ["--deploy-config", str(deploy)]
    return argv + list(spec.extra_args)


def sandbox_paths(spec: ServerSpec, argv: list[str]) -> sandbox.Paths:
    """What the server may read (its interpreter and executable, the deploy config, a local
    model, the paths its trusted `env` names) and write (a scratch directory beside its log)."""
    scratch = spec.log_path.with_suffix(".scratch")
    scratch.mkdir(parents=True, exist_ok=True)
    readable = [
        *sandbox.interpreter_roots(spec.python),
        Path(argv[0]).parent,
        Path(spec.model),
        *sandbox.named_paths(spec.env),
    ]
    if "--deploy-config" in argv:  # its folder: the file and its bases
        readable.append(Path(argv[argv.index("--deploy-config") + 1]).parent)
    return sandbox.Paths(readable=tuple(readable), writable=(scratch,))


@contextmanager
def launched(spec: ServerSpec) -> Iterator[RunningServer]:
    """Start the server in the sandbox, wait until it is healthy, yield it, and stop it (its
    PID namespace, and so every process it started, ends with it)."""
    port = free_port()
    argv = command(spec, port)
    env = server_env(spec)
    if spec.gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spec.gpus))
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    paths = sandbox_paths(spec, argv)
    with spec.log_path.open("ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        proc = sandbox.popen(argv, env, paths, stdout=log)
    url = f"http://127.0.0.1:{port}"

    # The log is the server's own text (untrusted): errors name it and link it, never quote it.
    link = server_log_url(str(spec.log_path))
    where = f"server log: {spec.log_path}" + (f" ({link})" if link else "")

    def healthy() -> bool:
        if proc.poll() is not None:  # not retried: a dead server never becomes healthy
            raise ServerStartError(
                f"server exited with {proc.returncode} before it was healthy; {where}"
            )
        try:
            return httpx.get(url + "/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        try:
            tenacity.Retrying(
                retry=tenacity.retry_if_result(lambda ok: not ok),
                stop=tenacity.stop_after_delay(spec.startup_timeout_s),
                wait=tenacity.wait_fixed(0.5),
            )(healthy)
        except tenacity.RetryError:
            raise ServerStartError(
                f"server not healthy after {spec.startup_timeout_s:g} s; {where}"
            ) from None
        yield RunningServer(url, proc.pid, spec.log_path, argv)
    finally:
        sandbox.stop(proc)


def provenance(
    spec: ServerSpec,
    *,
    repo: Path | None = None,
    commit: str | None = None,
    baseline_head: str | None = None,
    recorded_head: str | None = None,
) -> Provenance:
    env = server_env(spec)
    visible = ",".join(map(str, spec.gpus)) or None
    paths = sandbox.Paths(
        readable=(*sandbox.interpreter_roots(spec.python), *sandbox.named_paths(spec.env))
    )
    return Provenance(
        stack=stack_versions(spec.python, env, paths),
        gpus=gpu_inventory(visible),
        commit=commit,
        commit_time=commit_time(repo, commit) if repo is not None and commit else None,
        lineage=lineage(repo, commit, baseline_head, recorded_head),
    )
