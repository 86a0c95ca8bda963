"""The benchmark registry: each results file is recognised as its benchmark (a locale is its
own benchmark), a file of none is a clear error, and --benchmark names one explicitly."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_tasks import benchmarks
from omni_tasks.benchmarks import ImportOptions, UnknownBenchmark
from omni_tasks.benchmarks.artifact import ArtifactError, read_document
from tests.factories import small_artifact, write_json


def test_the_benchmarks_are_listed_with_family_metric_and_diagnoses() -> None:
    listed = {
        b.id: (b.family, b.metric, b.judged, b.runnable, sorted(b.diagnoses))
        for b in benchmarks.all_benchmarks()
    }
    seed = ("seed_tts", "wer", "wer", True, ["failure_modes", "questions"])
    shipped = {
        "seed_tts_en": seed,
        "seed_tts_zh": seed,
        "daily_omni": ("multiple_choice", "accuracy", "incorrect", True, []),
        "videomme": ("multiple_choice", "accuracy", "incorrect", True, []),
        "librispeech": ("asr_wer", "wer", "wer", True, []),
        "duplex_eval": ("duplex_eval", "judge_score", "incorrect", False, []),
        "voice_isolation": ("voice_isolation", "own_voice", "incorrect", False, []),
    }
    # Each shipped family as it is; a family added later needs no line here.
    assert {k: listed.get(k) for k in shipped} == shipped
    summary_only = {b.id for b in benchmarks.all_benchmarks() if b.summary_only_family}
    assert summary_only & set(shipped) == {"duplex_eval"}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (small_artifact(2), "seed_tts_en"),
        (
            {
                "date": "20261129-000000",
                "seed_tts_wer_eval_items": [
                    {"utterance_id": "z1", "locale": "zh", "wer": 0.0, "reference_raw": "你好"}
                ],
            },
            "seed_tts_zh",
        ),
        ({"date": "20261129-000000", "daily_omni_accuracy": 0.5}, "daily_omni"),
        ({"date": "20261129-000000", "videomme_accuracy": 0.5}, "videomme"),
    ],
)
def test_a_file_is_detected_as_its_benchmark(tmp_path: Path, doc: dict, expected: str) -> None:
    assert benchmarks.detect(read_document(write_json(tmp_path / "a.json", doc))).id == expected


def test_a_file_of_no_known_benchmark_is_a_clear_error(tmp_path: Path) -> None:
    path = write_json(tmp_path / "x.json", {"date": "20261129-000000", "mmlu_accuracy": 0.7})
    with pytest.raises(ArtifactError, match="not a results file of any known benchmark"):
        benchmarks.import_artifact(path, ImportOptions(branch="main"))
    with pytest.raises(ArtifactError, match="unknown benchmark 'mmlu'"):
        benchmarks.import_artifact(path, ImportOptions(branch="main"), "mmlu")


def test_benchmark_overrides_detection_and_must_fit_the_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a.json", small_artifact(2))
    art = benchmarks.import_artifact(path, ImportOptions(branch="main"), "seed_tts_zh")
    assert art.spec.benchmark == "seed_tts_zh"
    with pytest.raises(ArtifactError, match="not a vLLM-Omni daily_omni results file"):
        benchmarks.import_artifact(path, ImportOptions(branch="main"), "daily_omni")


def test_unknown_ids_and_double_registration_are_refused() -> None:
    with pytest.raises(UnknownBenchmark, match="known: seed_tts_en, seed_tts_zh"):
        benchmarks.get("seed_tts_fr")
    clone = type(benchmarks.get("daily_omni"))(
        id="daily_omni",
        prefix="daily_omni",
        breakdown_fields={},
        key_fields=("video_id",),
        description="another",
    )
    with pytest.raises(ValueError, match="already registered"):
        benchmarks.register(clone)


def test_a_suite_family_can_be_ab_tested_bisected_and_co_batched_unless_it_opts_out() -> None:
    capabilities = {b.id: sorted(b.capabilities) for b in benchmarks.all_benchmarks()}
    suite_default = ["ab", "bisect", "concurrency"]
    assert capabilities["librispeech"] == capabilities["daily_omni"] == suite_default
    assert capabilities["seed_tts_en"] == ["ab", "ablate", "bisect", "concurrency"]  # declared
    assert capabilities["duplex_eval"] == []  # no suite: its results arrive as artifacts

    daily = benchmarks.get("daily_omni")
    opted_out = type("NoCoBatching", (type(daily),), {"capabilities": frozenset({"ab"})})(
        id="no_co_batching",
        prefix="no_co_batching",
        breakdown_fields={},
        key_fields=("video_id",),
        description="a suite family that declares its own capabilities",
        suite=daily.suite,
    )
    assert opted_out.capabilities == {"ab"}
    with pytest.raises(ValueError, match="no 'concurrency' capability"):
        opted_out.require("concurrency", "co-batched")


def _daily(items: list[dict]) -> dict:
    return {"date": "20261129-000000", "daily_omni_accuracy": 0.5, "daily_omni_eval_items": items}


def _item(**kw: object) -> dict:
    return {
        "request_id": "0",
        "video_id": "v1",
        "task_type": "Reasoning",
        "gold": "B",
        "predicted": "B",
        "correct": True,
        "video_duration": "30s",
        **kw,
    }


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (_item(correct="yes"), r"daily_omni_eval_items\[1\] \(v1/Reasoning\): 'correct'"),
        (_item(gold=""), r"daily_omni_eval_items\[1\] \(v1/Reasoning\): 'gold'"),
        (_item(predicted="B" * 100), "'predicted' must be null or a string of at most 16"),
        (_item(task_type="Reason\x00ing"), r"daily_omni_eval_items\[1\] 'task_type'"),
        (_item(video_id=None, request_id=None), "needs video_id/task_type or a 'request_id'"),
    ],
)
def test_a_bad_multiple_choice_item_names_file_and_item(
    tmp_path: Path, item: dict, message: str
) -> None:
    path = write_json(tmp_path / "d.json", _daily([_item(video_id="v0"), item]))
    with pytest.raises(ArtifactError, match=message) as err:
        benchmarks.import_artifact(path, ImportOptions(branch="main"))
    assert str(path) in str(err.value)


def test_repeated_questions_and_missing_keys_are_kept_apart_with_warnings(tmp_path: Path) -> None:
    items = [
        _item(),
        _item(correct=False, predicted="C"),
        _item(video_id=None, request_id="7"),
        {"request_id": "8", "skipped": True, "reason": "no_gold"},
    ]
    art = benchmarks.import_artifact(
        write_json(tmp_path / "d.json", _daily(items)), ImportOptions(branch="main")
    )
    assert [c.utt_id for c in art.clips] == ["v1/Reasoning", "v1/Reasoning#2", "request:7"]
    assert [g.incorrect for g in art.grades] == [False, True, False]
    text = " ".join(art.warnings)
    assert "1 items repeat a question" in text and "1 items lack video_id/task_type" in text
    assert "1 items without a gold answer skipped" in text
    assert "daily_omni_accuracy: artifact 0.5, items give 0.666" in text


def test_a_failed_requests_error_is_kept_to_500_characters(tmp_path: Path) -> None:
    item = {
        "request_id": "0",
        "video_id": "v1",
        "task_type": "T",
        "gold": "B",
        "error": "x" * 10**5,
    }
    art = benchmarks.import_artifact(
        write_json(tmp_path / "d.json", _daily([item])), ImportOptions(branch="main")
    )
    (clip,) = art.clips
    assert clip.synth_status == "request_failed" and clip.error_detail == "x" * 500
