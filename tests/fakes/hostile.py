"""Hostile code for the sandbox tests: a `vllm` and a build backend that read every process
they can see for planted secrets, try to write outside their sandbox, leave a daemon, and print
what they found (base64 and hex) so the text travels on in the errors and logs."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

SECRETS = {
    "OMNI_SLACK_TOKEN": "xoxb-PLANTED-slack-5a9d0c1e",
    "OMNI_GITHUB_TOKEN": "ghp_PLANTEDgithubToken5a9d0c1e77",
    "AIRFLOW__CELERY__BROKER_URL": "redis://:PLANTEDbrokerPass5a9d@redis:6379/0",
    "OMNI_DATABASE_URL": "postgresql://omni:PLANTEDdbPass5a9d@db/omni",
}
VALUES = (
    "xoxb-PLANTED-slack-5a9d0c1e",
    "ghp_PLANTEDgithubToken5a9d0c1e77",
    "PLANTEDbrokerPass5a9d",
    "PLANTEDdbPass5a9d",
)
HEAP_MARKER = "PLANTED-execution-api-token-5a9d0c1e"  # the supervisor's heap, not its environ

# The hostile payload: stdlib only, self-contained (it runs wherever it was launched).
HOSTILE = r"""
import base64, json, os, subprocess, sys, time
WANTED = json.loads(os.environ.get("HOSTILE_WANTED", "[]")) or WANTED_DEFAULT
found, wrote = [], []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for name in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{name}", "rb").read().decode(errors="replace")
        except OSError:
            continue
        found += [w for w in WANTED if w in data]
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb") as mem:
            for line in maps:
                if line.endswith("[heap]"):
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    mem.seek(lo)
                    heap = mem.read(min(hi - lo, 256 << 20))
                    found += [w for w in WANTED if w.encode() in heap]
    except (OSError, ValueError):
        pass
for target in TARGETS:
    try:
        with open(target, "a") as f:
            f.write("# planted by hostile code\n")
        wrote.append(target)
    except OSError:
        pass
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", DAEMON_TAG],
                          start_new_session=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
report = json.dumps({"found": sorted(set(found)), "wrote": wrote, "daemon": daemon.pid})
print("HOSTILE " + base64.b64encode(report.encode()).decode(), flush=True)
print("HOSTILE-HEX " + report.encode().hex(), flush=True)
sys.stderr.write(report + "\n")
"""


def payload(tmp: Path, targets: list[Path]) -> str:
    return (
        f"WANTED_DEFAULT = {json.dumps([*VALUES, HEAP_MARKER])}\n"
        f"TARGETS = {json.dumps([str(t) for t in targets])}\n"
        f"DAEMON_TAG = {json.dumps(daemon_tag(tmp))}\n" + HOSTILE
    )


def daemon_tag(tmp: Path) -> str:
    # The whole path, not its name: pytest truncates test names, so two parametrized tests on
    # two xdist workers can both get "test_the_nightly_dag_in_an_uns0" (one's deliberately
    # left daemon then reads as the other's escape).
    return f"hostile-daemon-{hashlib.sha256(str(tmp).encode()).hexdigest()[:16]}"


def hostile_vllm(tmp: Path, targets: list[Path], serve: bool = False) -> Path:
    """A `vllm` that attacks, then dies (exit 3) or, with `serve`, serves the simulator as if
    nothing happened (the subtler attacker: the night completes)."""
    from tests.fakes.vllm_env import FAKE_VLLM

    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "vllm"
    then = FAKE_VLLM.format(python=sys.executable, mode="serve") if serve else "sys.exit(3)\n"
    exe.write_text(f"#!{sys.executable}\n{payload(tmp, targets)}\n{then}")
    exe.chmod(0o755)
    return bin_dir


def proc_text(proc: Path, name: str) -> str:
    """/proc/PID/NAME as text ("" when it is gone or unreadable)."""
    try:
        return (proc / name).read_bytes().decode(errors="replace")
    except OSError:
        return ""


def environ(proc: Path) -> str:
    return proc_text(proc, "environ")


def cmdline(proc: Path) -> str:
    return proc_text(proc, "cmdline")


def nightly_config(tmp: Path, targets: list[Path]) -> tuple[Path, dict[str, str]]:
    """A deployment whose main branch is served by the hostile `vllm` (rebase: the simulator),
    and the unsealed worker environment that holds every planted secret."""
    import yaml

    bin_dir = hostile_vllm(tmp, targets, serve=True)
    config = tmp / "srv-omni" / "nightly.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "vllm-serve", "rebase": "simulator:rebase"},
                "environment": {"strategy": "existing", "python": sys.executable},
                "server": {"model": "m", "gpus": 2, "startup_timeout_s": 60},
                "transcript_mode": True,
                "limit": 3,
            }
        )
    )
    planted = {
        **{k: v for k, v in SECRETS.items() if k != "OMNI_DATABASE_URL"},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "OMNI_NIGHTLY_CONFIG": str(config),
        "OMNI_TRUSTED_ROOTS": json.dumps([str(tmp), sys.prefix]),
        "OMNI_GPUS": "0,1",
        "AIRFLOW_EXECUTION_API_TOKEN": HEAP_MARKER,  # the supervisor's token, in every ancestor
        "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "1",  # the dead server's retries, at once
    }
    return config, planted


def attack_targets(tmp: Path) -> list[Path]:
    """What the attack tries to write: a `.pth` in the worker's venv, the trusted config."""
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (tmp / "srv-omni").mkdir()
    return [
        site / "site-packages" / f"omni-hostile-{tmp.name}.pth",
        tmp / "srv-omni" / "nightly.yaml",
    ]
