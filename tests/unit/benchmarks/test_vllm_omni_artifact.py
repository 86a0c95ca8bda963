"""Parsing the vLLM-Omni results artifact: clip statuses, thinker text, clear errors."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bench.artifacts import parse_artifact
from omni_tasks.benchmarks.seed_tts.artifact import ArtifactError
from tests.factories import small_artifact, write_json


def parse(tmp_path: Path, doc, **kw):  # type: ignore[no-untyped-def]
    return parse_artifact(write_json(tmp_path / "a.json", doc), branch="main", **kw)


def test_statuses_follow_design_table(tmp_path: Path) -> None:
    doc = small_artifact(2)
    codes = [
        "request_failed",
        "no_pcm",
        "empty_audio",
        "empty_asr",
        "asr_exception",
        "wer_compute_failed",
    ]
    for i, code in enumerate(codes):
        doc["seed_tts_wer_eval_items"].append(
            {
                "utterance_id": f"e{i}",
                "locale": "en",
                "error": code,
                "reference_raw": "Hello there friend.",
            }
        )
    doc["generated_texts"] = None
    art = parse(tmp_path, doc)
    by_id = {c.utt_id: c for c in art.clips}
    grades = {g.utt_id: g for g in art.grades}
    assert [by_id[f"e{i}"].synth_status for i in range(6)] == [
        "request_failed",
        "no_audio",
        "no_audio",
        "ok",
        "ok",
        "ok",
    ]
    assert "e0" not in grades and "e1" not in grades and "e2" not in grades
    assert grades["e3"].grade_status == "empty_transcript"
    assert grades["e3"].wer == 1.0 and grades["e3"].deletions == 3
    assert grades["e4"].grade_status == grades["e5"].grade_status == "grader_error"
    assert art.spec.n_expected == 8 and art.spec.status == "complete"
    assert art.spec.nightly == dt.date(2026, 11, 28)


def test_thinker_text_aligned_only_when_lengths_match(tmp_path: Path) -> None:
    art = parse(tmp_path, small_artifact(3))
    assert [c.thinker_text for c in art.clips] == [f"Sentence number {i}." for i in range(3)]
    assert all(g.thinker_wer == 0.0 for g in art.grades)
    doc = small_artifact(3)
    doc["generated_texts"] = doc["generated_texts"][:2]
    art = parse(tmp_path, doc)
    assert all(c.thinker_text is None for c in art.clips)
    assert any("generated_texts has 2 entries for 3 items" in w for w in art.warnings)


def test_without_items_is_summary_only_with_warning(tmp_path: Path) -> None:
    doc = small_artifact(3)
    del doc["seed_tts_wer_eval_items"]
    art = parse(tmp_path, doc)
    assert art.spec.status == "summary_only" and not art.clips
    assert art.spec.n_expected == 3
    assert any("gate needs per-clip rows" in w for w in art.warnings)


def test_flags_question_and_task_leak(tmp_path: Path) -> None:
    doc = small_artifact(0)
    doc["seed_tts_wer_eval_items"] = [
        {
            "utterance_id": "q",
            "locale": "en",
            "wer": 9.0,
            "reference_raw": "I feel sick, what should I do?",
            "asr_raw": "I'm sorry to hear that you're feeling unwell.",
        },
        {
            "utterance_id": "leak",
            "locale": "en",
            "wer": 3.0,
            "reference_raw": "Appearances are deceptive.",
            "asr_raw": "speech in the same language and style as the reference audio",
        },
    ]
    doc["generated_texts"] = None
    g = {x.utt_id: x for x in parse(tmp_path, doc).grades}
    assert g["q"].is_question and not g["q"].task_leak
    assert g["leak"].task_leak and not g["leak"].is_question
    assert g["leak"].wer == 3.0  # the artifact's figure is kept


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "top level must be a JSON object"),
        (b'{"foo": 1}', r"no seed_tts_\* keys"),
        (b'{"seed_tts_content_error_mean": 0.1}', "missing key 'date'"),
        (b'{"seed_tts_content_error_mean": 0.1, "date": "yesterday"}', "unrecognised date"),
        (b'{"date": "20261128", "seed_tts_wer_eval_items": {}}', "must be a list"),
    ],
)
def test_malformed_files_name_file_and_problem(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ArtifactError, match=message) as exc:
        parse_artifact(path, branch="main")
    assert str(path) in str(exc.value)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda items: items[1].update(utterance_id="u0"), "duplicate utterance_id 'u0'"),
        (lambda items: items[2].update(wer=float("nan")), r"items\[2\] \(u2\): 'wer' must be"),
        (lambda items: items[2].update(wer="0.1"), "'wer' must be a finite"),
        (lambda items: items[0].update(wer=-1), r"'wer' must be a finite number in \[0, 100000\]"),
        (lambda items: items[0].update(asr_raw=5), "'asr_raw' must be a string"),
        (lambda items: items[0].pop("utterance_id"), "'utterance_id' must be a non-empty"),
        (lambda items: items[3].update(error="boom"), "unknown error code 'boom'"),
        (lambda items: items.append(7), r"items\[5\] must be an object"),
    ],
)
def test_malformed_items_are_refused(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = small_artifact(5)
    mutate(doc["seed_tts_wer_eval_items"])
    raw = json.dumps(doc, allow_nan=True)
    path = tmp_path / "bad.json"
    path.write_text(raw)
    with pytest.raises(ArtifactError, match=message):
        parse_artifact(path, branch="main")


def test_upstream_mains_new_keys_are_kept_and_a_bad_tally_is_refused(tmp_path: Path) -> None:
    """After 0.30 upstream's summary has `seed_tts_finish_reason_counts` (a tally) and
    `seed_tts_length_capped` (a count), which its validator gates on: both are kept."""
    doc = {
        **small_artifact(3),
        "seed_tts_finish_reason_counts": {"stop": 2, "length": 1},
        "seed_tts_length_capped": 1,
    }
    art = parse(tmp_path, doc)
    assert art.spec.summary["seed_tts_finish_reason_counts"] == {"stop": 2, "length": 1}
    assert art.spec.summary["seed_tts_length_capped"] == 1
    doc["seed_tts_finish_reason_counts"] = {"x" * 500: -1}
    art = parse(tmp_path, doc)
    assert "seed_tts_finish_reason_counts" not in art.spec.summary
    assert any("finish_reason_counts" in w for w in art.warnings)


def test_per_item_finish_reasons_are_kept_and_length_capped_is_length(tmp_path: Path) -> None:
    doc = small_artifact(3)
    items = doc["seed_tts_wer_eval_items"]
    items[0]["finish_reason"] = "stop"
    items[1]["length_capped"] = True
    art = parse(tmp_path, doc)
    assert [c.finish_reason for c in art.clips] == ["stop", "length", None]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("finish_reason", "x" * 41, "'finish_reason' must be a short reason"),
        ("finish_reason", "stop\x1b[2J", "'finish_reason' must be a short reason"),
        ("finish_reason", 3, "'finish_reason' must be a short reason"),
        ("length_capped", "yes", "'length_capped' must be true or false"),
    ],
)
def test_a_bad_finish_reason_is_refused_naming_the_item(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    doc = small_artifact(2)
    doc["seed_tts_wer_eval_items"][1][field] = value
    with pytest.raises(ArtifactError, match=r"seed_tts_wer_eval_items\[1\]") as err:
        parse(tmp_path, doc)
    assert message in str(err.value)


def test_length_capped_contradicting_its_finish_reason_is_refused(tmp_path: Path) -> None:
    doc = small_artifact(1)
    doc["seed_tts_wer_eval_items"][0].update(finish_reason="stop", length_capped=True)
    with pytest.raises(ArtifactError, match="length_capped with finish_reason 'stop'"):
        parse(tmp_path, doc)
