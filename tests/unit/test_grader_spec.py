"""Grader identity: everything that changes a transcript changes the grader id."""

from __future__ import annotations

import pytest

from omni_tasks.grading.asr import GraderConfigError, GraderSpec, window
from omni_tasks.grading.wer import NORMALIZER_VERSION


def _id(**kw: object) -> str:
    return GraderSpec(**kw).resolved().grader_id("m@00000000")  # type: ignore[arg-type]


def test_defaults_are_the_cpu_grader() -> None:
    spec = GraderSpec().resolved()
    assert (spec.backend, spec.model, spec.precision, spec.window) == (
        "faster-whisper", "tiny.en", "int8", "truncate30"
    )  # fmt: skip
    assert GraderSpec(backend="transformers").resolved().precision == "fp32"


@pytest.mark.parametrize(
    "change",
    [
        {"precision": "float32"},
        {"window": "longform"},
        {"beam_size": 5},
        {"max_new_tokens": 448},
        {"language": "zh"},
        {"backend": "openai-whisper", "model": "x"},
    ],
)
def test_each_transcript_affecting_choice_changes_the_id(change: dict[str, object]) -> None:
    assert _id(**change) != _id()


def test_speed_only_choices_keep_the_id() -> None:
    assert _id(batch_size=64, device="cuda:1") == _id()


def test_id_names_backend_model_precision_window_decoding_normalizer() -> None:
    grader_id = _id(backend="transformers", precision="bf16")
    assert (
        grader_id
        == f"transformers/m@00000000/bf16/truncate30/greedy-t0-max224-en/{NORMALIZER_VERSION}"
    )


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"backend": "whisper.cpp"}, "unknown ASR backend"),
        ({"window": "30s"}, "unknown window policy"),
        ({"backend": "transformers", "window": "longform"}, "truncate30"),
        ({"precision": "bf16"}, "not available for faster-whisper"),
        ({"beam_size": 0}, "positive"),
    ],
)
def test_bad_specs_are_clear_errors(kw: dict[str, object], message: str) -> None:
    with pytest.raises(GraderConfigError, match=message):
        GraderSpec(**kw).resolved()  # type: ignore[arg-type]


def test_truncate30_hears_only_the_first_30_seconds() -> None:
    import numpy as np

    clip = np.ones(40 * 16_000, dtype=np.float32)
    assert len(window(clip, "truncate30")) == 30 * 16_000
    assert len(window(clip, "longform")) == 40 * 16_000
