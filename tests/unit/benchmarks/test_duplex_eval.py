"""Omni-DuplexEval summaries: figures on their scales with the protocol pin, a night dated by
its build when the file has no date, and hostile values refused with the file named."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from omni_tasks import benchmarks
from omni_tasks.analysis.validity import run_validity
from omni_tasks.benchmarks.artifact import ArtifactError
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN

BUILT = dt.date(2026, 11, 28)


def summary(**over: Any) -> dict[str, Any]:
    doc = {
        "protocol_pin": PROTOCOL_PIN,
        "samples": 66,
        "rtd": {"mean_content_score": 1.1, "mean_avg_temporal_score": 2.3, "by_task": {}},
        "pr": {"samples": 36, "mean_all_success": 0.2, "by_task": {"correction": 0.5}},
    }
    return {**doc, **over}


def parse(tmp_path: Path, doc: dict[str, Any], built: dt.date | None = BUILT):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    return benchmarks.import_artifact(path, ImportOptions(branch="main", built=built))


def test_a_summary_is_a_summary_only_night_of_figures(tmp_path: Path) -> None:
    art = parse(tmp_path, summary())
    assert (art.spec.benchmark, art.spec.status, art.spec.nightly) == (
        "duplex_eval",
        "summary_only",
        BUILT,
    )
    assert art.spec.summary == {
        "protocol_pin": PROTOCOL_PIN,
        "duplex_samples": 66,
        "rtd.mean_content_score": 1.1,
        "rtd.mean_avg_temporal_score": 2.3,
        "pr.mean_all_success": 0.2,
        "pr.by_task.correction": 0.5,
    }
    assert art.clips == [] and art.warnings == []
    assert run_validity(art.spec, [], expected_items=66, protocol_pin=PROTOCOL_PIN) == []


def test_another_pin_is_imported_with_a_warning_and_is_not_valid(tmp_path: Path) -> None:
    art = parse(tmp_path, summary(protocol_pin="a" * 40, samples=60))
    assert "not comparable" in art.warnings[0]
    assert run_validity(art.spec, [], expected_items=66, protocol_pin=PROTOCOL_PIN) == [
        "short night: 60 of the suite's 66 items evaluated",
        "protocol pin aaaaaaaaaaaa is not the series' ca3c122b4d4b: judged by another "
        "evaluator version",
    ]


def test_a_gate_that_judged_nothing_makes_the_night_not_valid(tmp_path: Path) -> None:
    art = parse(tmp_path, summary())
    verdicts = [{"gate": "x >= 1", "figure": "x", "value": None, "verdict": "not_evaluated"}]
    assert run_validity(art.spec, verdicts) == [
        "gate not evaluated: x >= 1 (x was not computed, so upstream's test skipped it)"
    ]


@pytest.mark.parametrize(
    ("over", "says"),
    [
        ({"protocol_pin": "../../etc"}, "'protocol_pin' must be a commit hash"),
        ({"samples": -1}, "'samples' must be a count"),
        ({"rtd": {"mean_content_score": 7.0}}, "must be a number in [0, 3]"),
        ({"pr": {"mean_all_success": 1e300}}, "must be a number in [0, 1]"),
        ({"pr": {"by_task": {"bad\x1b[2J": 0.5}}}, "is not a plain name"),
        ({"rtd": {"by_task": {f"t{i}": {} for i in range(41)}}}, "at most 40 tasks"),
    ],
)
def test_hostile_values_are_refused_naming_the_file(tmp_path: Path, over, says) -> None:
    with pytest.raises(ArtifactError) as err:
        parse(tmp_path, summary(**over))
    assert str(err.value).startswith(str(tmp_path / "summary.json")) and says in str(err.value)


def test_without_a_date_or_a_build_the_night_must_be_given(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="missing key 'date'"):
        parse(tmp_path, summary(), built=None)


def test_the_guards_first_assertions_are_the_pin_then_the_sample_count(tmp_path: Path) -> None:
    duplex = benchmarks.get("duplex_eval")
    ok = parse(tmp_path, summary()).spec.summary
    assert duplex.guard_failures(ok, 66) == []
    short = parse(tmp_path, summary(samples=60)).spec.summary
    assert duplex.guard_failures(short, 66) == ["expected 66 samples, got 60"]
    assert duplex.guard_failures(short, None) == []  # the count is not known: not asserted
    other = parse(tmp_path, summary(protocol_pin="b" * 40, samples=60)).spec.summary
    assert duplex.guard_failures(other, 66) == [
        f"protocol_pin changed: {'b' * 40} != {PROTOCOL_PIN}"
    ]
