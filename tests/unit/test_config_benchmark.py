"""`OMNI_BENCHMARK` unset: the benchmark meant where none is named is the deployment config's
default (`defaults.benchmark`; a version 1 config's `benchmark`), else seed_tts_en."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_tasks.config import Settings, configured_benchmark


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "nightly.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_version_2_config_names_the_default_in_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path, "version: 2\ndefaults: {benchmark: daily_omni}\nseries: []\n")
    monkeypatch.delenv("OMNI_BENCHMARK", raising=False)
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", config)
    assert Settings().benchmark == "daily_omni"
    monkeypatch.setenv("OMNI_BENCHMARK", "videomme")  # the environment wins
    assert Settings().benchmark == "videomme"


def test_a_version_1_config_names_it_at_the_top(tmp_path: Path) -> None:
    assert configured_benchmark(_config(tmp_path, "version: 1\nbenchmark: seed_tts_zh\n")) == (
        "seed_tts_zh"
    )


@pytest.mark.parametrize(
    "text",
    [
        "version: 2\nseries: [{benchmark: daily_omni}]\n",  # a series' own is not the default
        "version: 2\ndefaults: [not, a, mapping]\n",
        "version: 1\nbenchmark: 3\n",
        "{not yaml: [",
    ],
)
def test_no_default_named_leaves_seed_tts_en(tmp_path: Path, text: str) -> None:
    assert configured_benchmark(_config(tmp_path, text)) == "seed_tts_en"


def test_no_config_or_an_unreadable_one_leaves_seed_tts_en(tmp_path: Path) -> None:
    assert configured_benchmark(None) == "seed_tts_en"
    assert configured_benchmark(str(tmp_path / "missing.yaml")) == "seed_tts_en"
