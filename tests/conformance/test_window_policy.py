"""(f) Upstream's own English transcription call (`_transcribe_en_f32_16k`, seed_tts_eval.py),
run unmodified with a small random Whisper in place of large-v3, and our transformers grader
under the harness version's window policy transcribe the same clips identically: short clips,
clips over 30 s (truncated up to 0.28.0, whole with timestamps from 0.30.0) and an empty clip.
Our grader decodes them batched; upstream one at a time."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from transformers import WhisperForConditionalGeneration, WhisperProcessor

from omni_tasks.grading.asr import GraderSpec, LoadedGrader
from omni_tasks.grading.backends import load_grader
from omni_tasks.harness import harness_window
from tests.conformance.upstream import Upstream
from tests.fakes.synthetic_models import build_transformers_whisper

EVAL = "vllm_omni.benchmarks.data_modules.seed_tts_eval"
SECONDS = (4, 12, 0, 45, 70)  # two short, an empty one, two over 30 s


@pytest.fixture(scope="module")
def whisper_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_transformers_whisper(tmp_path_factory.mktemp("hf") / "whisper-random", seed=3)


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [(0.1 * rng.standard_normal(s * 16_000)).astype(np.float32) for s in SECONDS]


def _upstream_transcribe(upstream: Upstream, model_dir: Path):  # type: ignore[no-untyped-def]
    """Upstream's function, its module globals holding our model as `_ensure_en_asr` would.
    Loaded into a namespace of its own: check (d) scripts this function in the shared one."""
    fresh = Upstream(upstream.version, upstream.standins)
    fn = fresh.load(EVAL, ["_transcribe_en_f32_16k"])["_transcribe_en_f32_16k"]
    space = fn.__globals__
    space["_en_processor"] = WhisperProcessor.from_pretrained(str(model_dir))
    space["_en_model"] = WhisperForConditionalGeneration.from_pretrained(str(model_dir)).eval()
    space["_device"] = "cpu"
    space["_lock"] = threading.Lock()
    return fn


@pytest.fixture(scope="module")
def upstream_says(upstream: Upstream, whisper_dir: Path, clips: list[np.ndarray]) -> list[str]:
    """Upstream's transcripts of the clips, one at a time as it calls them (both checks read
    them: computed once per version)."""
    theirs = _upstream_transcribe(upstream, whisper_dir)
    return [theirs(c) for c in clips]


def _ours(version: str, model_dir: Path) -> LoadedGrader:
    return load_grader(
        GraderSpec(backend="transformers", model=str(model_dir), harness_version=version)
    )


def test_f_upstreams_transcription_and_our_grader_agree(
    row: str, whisper_dir: Path, clips: list[np.ndarray], upstream_says: list[str]
) -> None:
    ours = _ours(row, whisper_dir)
    assert f"/{harness_window(row)}/" in ours.grader_id
    expected = upstream_says
    assert ours.backend.transcribe(clips) == expected
    assert expected[2] == ""
    assert all(expected[i] for i in (0, 1, 3, 4))  # random weights still say something


def test_f_the_other_policy_would_not_match(
    row: str, whisper_dir: Path, clips: list[np.ndarray], upstream_says: list[str]
) -> None:
    """The check can fail: graded under the other version's policy, the long clips differ."""
    other = "0.28.0" if harness_window(row) == "whole-timestamps" else "0.30.0"
    wrong = _ours(other, whisper_dir).backend.transcribe(clips)
    expected = upstream_says
    assert wrong[:3] == expected[:3]  # clips up to 30 s take the same path under both
    assert wrong[3] != expected[3] and wrong[4] != expected[4]
