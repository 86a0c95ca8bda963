"""GPU placement on a worker host: which GPUs a benchmark task uses.

The Airflow `gpu` pool counts slots across the fleet (a Qwen3-Omni server takes two: thinker on
one; talker, code2wav and Whisper on the other); on the host, each task takes that many GPUs by
an exclusive file lock per GPU, so two branches never share a GPU, and sets
CUDA_VISIBLE_DEVICES. Locks vanish with the process, so a killed task frees its GPUs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tenacity
from filelock import FileLock, Timeout

from omni_tasks.synthesis.provenance import nvidia_smi


def visible_gpus() -> list[str]:
    """GPU ids on this host: OMNI_GPUS ("0,1,2,3") or nvidia-smi's list."""
    configured = os.environ.get("OMNI_GPUS")
    if configured is not None:
        return [g.strip() for g in configured.split(",") if g.strip()]
    return [index for (index,) in nvidia_smi("index")]


class _Busy(Exception):
    """Fewer than the wanted GPUs were free on this try."""


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
    # All or nothing: holding some GPUs while waiting for others deadlocks two tasks that each
    # took one; a try that gets fewer lets go, and the next comes after a random pause so two
    # waiters do not collide.
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(_Busy),
        stop=tenacity.stop_after_delay(timeout_s),
        wait=tenacity.wait_random(0.2, 1.0),
        reraise=True,
    )
    try:
        held = retrying(_take, gpus, n, lock_dir)
    except _Busy:
        raise TimeoutError(f"no {n} free GPU(s) within {timeout_s:g} s") from None
    try:
        yield sorted(held)
    finally:
        _release(held)


def _take(gpus: list[str], n: int, lock_dir: Path) -> dict[str, FileLock]:
    held: dict[str, FileLock] = {}
    for g in gpus:
        lock = FileLock(lock_dir / f"gpu{g}.lock", thread_local=False)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            continue
        held[g] = lock
        if len(held) == n:
            return held
    _release(held)
    raise _Busy


def _release(held: dict[str, FileLock]) -> None:
    for lock in held.values():
        lock.release()
    held.clear()
