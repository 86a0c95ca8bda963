"""A bisection's id names its series: the bisects one rebase starts (one per regressed series,
over the same commits, target, seed and data) never share a run key."""

from __future__ import annotations

from omni_tasks.jobs.bisect import BisectParams

HISTORY = ["a" * 40, "b" * 40, "c" * 40]


def _id(**fields: object) -> str:
    return BisectParams(history=HISTORY, target="simulator:commit-history", **fields).bisect_id


def test_each_series_and_variant_has_its_own_bisect() -> None:
    ids = [
        _id(benchmark="daily_omni"),
        _id(benchmark="seed_tts_en"),
        _id(benchmark="daily_omni", lane="h100", server={"model": "org/model-a"}),
        _id(benchmark="daily_omni", lane="h200", server={"model": "org/model-b"}),
        _id(benchmark="daily_omni", lane="h100", server={"model": "org/model-b"}),
        _id(benchmark="daily_omni", variant="eager"),
    ]
    assert len(set(ids)) == len(ids)


def test_the_same_bisect_keeps_its_id() -> None:
    """A retried task (or the command run again) finds the runs it stored."""
    a = _id(benchmark="daily_omni", lane="h100", server={"model": "org/model-a"})
    assert a == _id(benchmark="daily_omni", lane="h100", server={"model": "org/model-a"})
    assert len(a) == 10 and int(a, 16) >= 0
