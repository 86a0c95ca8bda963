"""What exactly served a run: stack versions from the serving environment, the GPU, the commit
and its lineage (DESIGN.md "Airflow": a candidate reachable from the baseline's head is really
benchmarking a baseline commit; a commit other than the branch head recorded that night is
not what the branch looked like)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from omni_tasks.contracts import JsonObject
from omni_tasks.records import LineageFlags
from omni_tasks.trust import sandbox
from omni_tasks.trust.child_env import child_env

_VERSIONS = """
import json, importlib.metadata as m, platform
out = {"python": platform.python_version()}
for dist in ("vllm", "vllm-omni", "torch", "transformers"):
    try:
        out[dist.replace("-", "_")] = m.version(dist)
    except m.PackageNotFoundError:
        out[dist.replace("-", "_")] = None
try:
    import torch
    out["cuda"] = torch.version.cuda
except Exception:
    out["cuda"] = None
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Lineage:
    reachable_from_baseline_head: bool | None = None
    differs_from_recorded_head: bool | None = None

    def flags(self) -> LineageFlags:
        return {
            "reachable_from_baseline_head": self.reachable_from_baseline_head,
            "differs_from_recorded_head": self.differs_from_recorded_head,
        }


@dataclass(frozen=True)
class Provenance:
    stack: JsonObject = field(default_factory=dict)
    gpus: list[dict[str, str]] = field(default_factory=list)
    commit: str | None = None
    commit_time: dt.datetime | None = None
    lineage: Lineage = field(default_factory=Lineage)

    @property
    def gpu_class(self) -> str | None:
        names = sorted({g["name"] for g in self.gpus})
        return "+".join(names) if names else None

    def stack_record(self) -> JsonObject:
        driver = sorted({g["driver"] for g in self.gpus})
        return {**self.stack, "gpu": self.gpu_class, "driver": driver[0] if driver else None}


def stack_versions(python: str, env: dict[str, str], paths: sandbox.Paths) -> JsonObject:
    """Versions of vllm, vllm-omni, torch and CUDA as the serving interpreter sees them (run in
    the sandbox: the interpreter is the environment's own, and its .pth files run on start)."""
    out = sandbox.run([python, "-c", _VERSIONS], env, paths, timeout=120)
    if out.returncode != 0:
        return {"error": f"could not read versions from {python} (exit {out.returncode})"}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def nvidia_smi(*fields: str) -> list[list[str]]:
    """nvidia-smi's `--query-gpu` rows of `fields`, each value stripped (none without it)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    out = _run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader"], timeout=30)
    rows = (line.split(",", len(fields) - 1) for line in out.stdout.splitlines() if line.strip())
    return [[p.strip() for p in row] for row in rows]


def gpu_inventory(visible: str | None = None) -> list[dict[str, str]]:
    """GPU name and driver per device from nvidia-smi (empty when there is none)."""
    wanted = None if not visible else {v.strip() for v in visible.split(",")}
    return [
        {"index": index, "name": name, "driver": driver}
        for index, name, driver in nvidia_smi("index", "name", "driver_version")
        if wanted is None or index in wanted
    ]


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A trusted child's output; it still gets no secret (its /proc block is readable)."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, env=child_env()
    )


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(["git", "-C", str(repo), *args], timeout=60)


def commit_time(repo: Path, commit: str) -> dt.datetime | None:
    out = _git(repo, "show", "-s", "--format=%cI", "--end-of-options", commit)
    return dt.datetime.fromisoformat(out.stdout.strip()) if out.returncode == 0 else None


def lineage(
    repo: Path | None, commit: str | None, baseline_head: str | None, recorded_head: str | None
) -> Lineage:
    """Both flags; None where the answer is unknown (no repo, no recorded head)."""
    differs = None if not (commit and recorded_head) else commit != recorded_head
    reachable = None
    if repo is not None and commit and baseline_head:
        out = _git(repo, "merge-base", "--is-ancestor", "--end-of-options", commit, baseline_head)
        reachable = {0: True, 1: False}.get(out.returncode)
    return Lineage(reachable, differs)
