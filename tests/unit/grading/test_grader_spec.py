"""Grader identity: everything that changes a transcript changes the grader id."""

from __future__ import annotations

import pytest

from omni_tasks.grading.asr import GraderConfigError, GraderSpec, window
from omni_tasks.grading.wer import NORMALIZER_VERSION
from omni_tasks.harness import window_of


def _id(**kw: object) -> str:
    return GraderSpec(**kw).resolved().grader_id("m@00000000")  # type: ignore[arg-type]


def test_defaults_are_the_cpu_grader() -> None:
    spec = GraderSpec().resolved()
    assert (spec.backend, spec.model, spec.precision, spec.window) == (
        "faster-whisper",
        "tiny.en",
        "int8",
        "truncate30",
    )
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
    grader_id = _id(backend="faster-whisper", precision="float32")
    assert (
        grader_id
        == f"faster-whisper/m@00000000/float32/truncate30/greedy-t0-max224-en/{NORMALIZER_VERSION}"
    )


def test_the_transformers_id_records_the_library_version_and_no_token_limit() -> None:
    """The harness passes no limit (large-v3's generation config stops at 448 tokens), and its
    decoding path depends on the transformers version (forced_decoder_ids or the fallback)."""
    spec = GraderSpec(backend="transformers", precision="bf16").resolved()
    assert spec.max_new_tokens is None
    assert spec.grader_id("m@00000000", "5.24.0") == (
        f"transformers==5.24.0/m@00000000/bf16/truncate30/greedy-t0-maxgen-en/{NORMALIZER_VERSION}"
    )


@pytest.mark.parametrize(
    ("version", "policy"),
    [("0.26.0", "truncate30"), ("0.28.0", "truncate30"), ("0.30.0", "whole-timestamps")],
)
def test_the_harness_version_picks_the_transformers_window(version: str, policy: str) -> None:
    spec = GraderSpec(backend="transformers", harness_version=version).resolved()
    assert spec.window == policy
    assert f"/{policy}/" in spec.grader_id("m@00000000")


def test_a_window_that_contradicts_the_harness_version_is_refused() -> None:
    with pytest.raises(GraderConfigError, match=r"harness 0\.30\.0 grades with window"):
        GraderSpec(backend="transformers", harness_version="0.30.0", window="truncate30").resolved()
    with pytest.raises(GraderConfigError, match=r"known: 0\.26\.0, 0\.28\.0, 0\.30\.0"):
        GraderSpec(backend="transformers", harness_version="0.29.0").resolved()


def test_window_of_reads_the_policy_from_any_grader_id() -> None:
    assert window_of(_id(backend="transformers", harness_version="0.30.0")) == "whole-timestamps"
    assert window_of("artifact:vllm-omni-seed-tts/truncate30") == "truncate30"
    assert window_of("artifact:vllm-omni-seed-tts") is None


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"backend": "whisper.cpp"}, "unknown ASR backend"),
        ({"window": "30s"}, "unknown window policy"),
        ({"backend": "transformers", "window": "longform"}, "not available for transformers"),
        ({"window": "whole-timestamps"}, "not available for faster-whisper"),
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


def test_another_backend_never_grades_a_harness_run_with_its_own_window_silently() -> None:
    """Only the transformers grader follows a harness's window: another backend asked to
    match 0.30 (whole-timestamps) is refused unless the window is stated on purpose."""
    for backend in ("openai-whisper", "faster-whisper"):
        with pytest.raises(GraderConfigError, match=r"--window"):
            GraderSpec(backend=backend, harness_version="0.30.0").resolved()
        chosen = GraderSpec(backend=backend, harness_version="0.30.0", window="truncate30")
        assert chosen.resolved().window == "truncate30"
        # 0.28's window is the default one: nothing to refuse.
        assert GraderSpec(backend=backend, harness_version="0.28.0").resolved().window == (
            "truncate30"
        )
