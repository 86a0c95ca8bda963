"""Launch a vLLM-Omni server for one model + deploy config in a given environment.

The command is an argument list (never a shell string), run in its own process group on the
given GPUs and a free loopback port; startup waits for the port and `/health` (or fails early
with the log's tail when the process exits); the log is kept with the run; teardown stops the
whole process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import tenacity
import yaml

from omni_tasks.synthesis.provenance import (
    Provenance,
    commit_time,
    gpu_inventory,
    lineage,
    stack_versions,
)
from omni_tasks.synthesis.stages import merge_deploy
from omni_tasks.trust.child_env import child_env, seal
from omni_tasks.trust.redact import redact


class ServerStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class ServerSpec:
    python: str  # the environment's interpreter; its bin dir is searched for `vllm` first
    model: str
    log_path: Path
    deploy_config: Path | None = None
    deploy_overrides: dict[str, Any] = field(default_factory=dict)  # merged into the yaml
    extra_args: tuple[str, ...] = ()
    gpus: tuple[int, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: str = "vllm"  # or "module": python -m vllm_omni.entrypoints.cli.main
    startup_timeout_s: float = 1200.0


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
    """The deploy yaml with the variant's overrides merged in, written beside the log."""
    if spec.deploy_config is None and not spec.deploy_overrides:
        return None
    base: dict[str, Any] = {}
    if spec.deploy_config is not None:
        base = yaml.safe_load(spec.deploy_config.read_text(encoding="utf-8")) or {}
    merged = merge_deploy(base, spec.deploy_overrides)
    path = spec.log_path.with_suffix(".deploy.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
    return path


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


def _tail(path: Path, n: int = 20) -> str:
    """The log's last lines, through the redaction gate: the server is untrusted and its log
    travels on to Slack and check runs."""
    try:
        return redact("\n".join(path.read_text(errors="replace").splitlines()[-n:]))
    except OSError:
        return "(no log)"


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


@contextmanager
def launched(spec: ServerSpec) -> Iterator[RunningServer]:
    """Start the server, wait until it is healthy, yield it, and stop its process group."""
    port = free_port()
    argv = command(spec, port)
    env = server_env(spec)
    if spec.gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spec.gpus))
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    seal()  # the server runs as our user: /proc/$PPID/environ must hold no secret
    with spec.log_path.open("ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:  # not retried: a dead server never becomes healthy
            raise ServerStartError(
                f"server exited with {proc.returncode} before it was healthy; "
                f"log {spec.log_path}:\n{_tail(spec.log_path)}"
            )
        return _healthy(url)

    try:
        try:
            tenacity.Retrying(
                retry=tenacity.retry_if_result(lambda ok: not ok),
                stop=tenacity.stop_after_delay(spec.startup_timeout_s),
                wait=tenacity.wait_fixed(0.5),
            )(healthy)
        except tenacity.RetryError:
            raise ServerStartError(
                f"server not healthy after {spec.startup_timeout_s:g} s; "
                f"log {spec.log_path}:\n{_tail(spec.log_path)}"
            ) from None
        yield RunningServer(url, proc.pid, spec.log_path, argv)
    finally:
        _stop(proc)


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
    return Provenance(
        stack=stack_versions(spec.python, env),
        gpus=gpu_inventory(visible),
        commit=commit,
        commit_time=commit_time(repo, commit) if repo is not None and commit else None,
        lineage=lineage(repo, commit, baseline_head, recorded_head),
    )
