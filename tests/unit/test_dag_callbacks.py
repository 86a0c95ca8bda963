"""A failed task's INFRA alert belongs to the series the task ran for."""

from __future__ import annotations

from types import SimpleNamespace

from omni_tasks.dag_support.callbacks import series_of_task
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series


def test_a_nightly_gpu_task_names_its_plans_series() -> None:
    lane = Series("daily_omni", "openbmb/MiniCPM-o-4_5", "rocm-mi300")
    task = SimpleNamespace(op_kwargs={"plan": {"series": lane.key, "branch": "rebase"}})
    assert series_of_task({"task": task, "params": {}}) == lane


def test_a_one_series_form_names_its_benchmark_model_and_lane() -> None:
    params = {"benchmark": "seed_tts_zh", "lane": "npu-a3", "server": {"model": "m/x"}}
    assert series_of_task({"task": SimpleNamespace(), "params": params}) == Series(
        "seed_tts_zh", "m/x", "npu-a3"
    )


def test_a_fleet_wide_task_is_the_default_series() -> None:
    got = series_of_task({"task": SimpleNamespace(op_kwargs={}), "params": {}})
    assert (got.model, got.lane) == (DEFAULT_MODEL, DEFAULT_LANE)
