"""GPU placement on a worker host: which GPUs a benchmark task uses.

The Airflow `gpu` pool counts slots across the fleet (a Qwen3-Omni server takes two: thinker on
one; talker, code2wav and Whisper on the other); on the host, each task takes that many GPUs by
an exclusive file lock per GPU, so two branches never share a GPU, and sets
CUDA_VISIBLE_DEVICES. Locks vanish with the process, so a killed task frees its GPUs.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def visible_gpus() -> list[str]:
    """GPU ids on this host: OMNI_GPUS ("0,1,2,3") or nvidia-smi's list."""
    configured = os.environ.get("OMNI_GPUS")
    if configured is not None:
        return [g.strip() for g in configured.split(",") if g.strip()]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    out = subprocess.run(
        [smi, "--query-gpu=index", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


@contextmanager
def gpu_lease(
    n: int, lock_dir: Path = Path("/tmp/omni-tasks-gpus"), timeout_s: float = 3600
) -> Iterator[list[str]]:
    """Hold `n` GPUs exclusively; yields their ids (empty when n == 0)."""
    if n == 0:
        yield []
        return
    gpus = visible_gpus()
    if len(gpus) < n:
        raise RuntimeError(f"{n} GPU(s) needed, {len(gpus)} visible on this host")
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    held: dict[str, IO[str]] = {}
    try:
        while True:
            for g in gpus:
                if len(held) == n:
                    break
                fh: IO[str] = (lock_dir / f"gpu{g}.lock").open("w")
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held[g] = fh
                except BlockingIOError:
                    fh.close()
            if len(held) == n:
                break
            # All or nothing: holding some GPUs while waiting for others deadlocks two tasks
            # that each took one; let go, and retry after a random pause so they do not collide.
            _release(held)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {n} free GPU(s) within {timeout_s:g} s")
            time.sleep(random.uniform(0.2, 1.0))
        yield sorted(held)
    finally:
        _release(held)


def _release(held: dict[str, IO[str]]) -> None:
    for fh in held.values():
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()
    held.clear()
