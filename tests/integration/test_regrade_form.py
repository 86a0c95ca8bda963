"""The re-grade form: an empty field is the deployment config's grader for the run's series (by
its benchmark, model and lane), a given one overrides it once, and a form outside the
allow-list or naming no stored run is refused before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from omni_tasks.jobs.regrade import RegradeFormError, grader_spec
from omni_tasks.series import Series
from omni_tasks.store.runs import RunNotFoundError
from tests.factories import SAME, store_night

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
CONFIG = {
    "version": 2,
    "lanes": {
        "cuda-h100x2": {"queue": "gpu", "pool": "gpu", "gpus_per_server": 2},
        "rocm-mi300": {"queue": "gpu-rocm", "pool": "gpu-rocm", "gpus_per_server": 2},
    },
    "defaults": {"grader": {"backend": "faster-whisper", "device": "cuda", "batch_size": 16}},
    "series": [
        {
            "model": QWEN,
            "benchmark": "seed_tts_en",
            "lane": "cuda-h100x2",
            "branches": ["main", "rebase"],
            "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
        },
        {
            "model": MINICPM,
            "benchmark": "seed_tts_en",
            "lane": "rocm-mi300",
            "branches": ["main", "rebase"],
            "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
            "grader": {"backend": "transformers", "device": "cuda:1", "harness_version": "0.30.0"},
        },
    ],
}


def _run_key(db, series: Series) -> str:
    row = db.execute(
        "SELECT run_key FROM omni.run WHERE model = %s AND lane = %s AND branch = 'rebase'",
        (series.model, series.lane),
    ).fetchone()
    return str(row["run_key"])


def test_empty_fields_are_the_series_grader(db, tmp_path: Path) -> None:
    config = tmp_path / "fleet.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    qwen, minicpm = (
        Series("seed_tts_en", QWEN, "cuda-h100x2"),
        Series("seed_tts_en", MINICPM, "rocm-mi300"),
    )
    store_night(db, tmp_path, 0, SAME, series=qwen)
    store_night(db, tmp_path, 0, SAME, series=minicpm)

    spec = grader_spec(db, {"run_key": _run_key(db, qwen)}, str(config))
    assert (spec.backend, spec.device, spec.batch_size) == ("faster-whisper", "cuda", 16)
    spec = grader_spec(db, {"run_key": _run_key(db, minicpm), "backend": None}, str(config))
    assert (spec.backend, spec.device, spec.harness_version) == ("transformers", "cuda:1", "0.30.0")
    # A given field overrides the config's once; the rest stays the series'.
    spec = grader_spec(db, {"run_key": _run_key(db, minicpm), "device": "cpu"}, str(config))
    assert (spec.backend, spec.device) == ("transformers", "cpu")
    # No config (a bare install): the grader's own defaults.
    spec = grader_spec(db, {"run_key": _run_key(db, qwen)}, None)
    assert (spec.backend, spec.device) == ("faster-whisper", "cpu")


def test_refused_before_any_model_loads(db, tmp_path: Path) -> None:
    with pytest.raises(RegradeFormError, match="model: not a regrade field"):
        grader_spec(db, {"run_key": "x", "model": "/tmp/evil"}, None)
    with pytest.raises(RegradeFormError, match="device"):
        grader_spec(db, {"run_key": "x", "device": "cuda; rm -rf /"}, None)
    with pytest.raises(RunNotFoundError, match="no run with key 'nope'"):
        grader_spec(db, {"run_key": "nope"}, None)
