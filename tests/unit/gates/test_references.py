"""Accuracy references (gates/references.py) in TensorRT-LLM's layout: a suite's test and, per
model, entries keyed by SKU and protocol, the first match used; the thresholds they give are
TensorRT-LLM's own (the MMLU table their compute_theta_and_thresholds.py prints); a malformed
file is refused naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from omni_tasks import benchmarks
from omni_tasks.gates.references import (
    TABLE,
    NotRegistered,
    ReferenceError,
    entry_yaml,
    load_references,
    reference_for,
)

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
# TensorRT-LLM's MMLU test (σ 50, α .05, β .2) and its README's table: threshold − reference.
MMLU = {"figure": "mmlu_accuracy", "higher_is_better": True, "alpha": 0.05, "beta": 0.2}
AT_4096, AT_1024 = -1.817324, -3.634647


def write(tmp: Path, suites: dict[str, object]) -> Path:
    path = tmp / "references.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "suites": suites}))
    return path


def mmlu(*entries: dict[str, object], num_samples: int = 4096) -> dict[str, object]:
    return {
        "mmlu": {**MMLU, "sigma": 50, "num_samples": num_samples, "models": {MODEL: [*entries]}}
    }


def test_a_reference_gives_tensorrt_llms_threshold(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        mmlu(
            {"sku": "H100", "accuracy": 68.17, "source": "nightly"},
            {"sku": "H100", "protocol": "realtime", "accuracy": 60.0, "source": "x"},
            {"sku": "B200", "accuracy": 70.0, "num_samples": 1024, "source": "y"},
        ),
    )
    h100 = reference_for("mmlu", MODEL, "h100", "chat", path)  # the agent's lower case
    assert (h100.accuracy, h100.protocol, h100.num_samples) == (68.17, "chat", 4096)
    assert h100.gate().threshold == pytest.approx(68.17 + AT_4096, abs=1e-5)
    assert h100.comparator == ">="  # the figure on the threshold or on the better side
    assert reference_for("mmlu", MODEL, "H100", "realtime", path).accuracy == 60.0
    b200 = reference_for("mmlu", MODEL, "B200", "chat", path)  # its own n overrides the suite's
    assert b200.gate().threshold == pytest.approx(70.0 + AT_1024, abs=1e-5)


def test_the_first_matching_entry_wins(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        mmlu(
            {"sku": "H100", "accuracy": 68.0, "source": "first"},
            {"sku": "H100", "accuracy": 50.0, "source": "second"},
        ),
    )
    assert reference_for("mmlu", MODEL, "H100", "chat", path).source == "first"


def test_a_figure_that_must_stay_below_mirrors_the_threshold(tmp_path: Path) -> None:
    wer = {"figure": "wer", "higher_is_better": False, "alpha": 0.05, "beta": 0.2}
    entry = {"sku": "H100", "accuracy": 10.0, "source": "s"}
    path = write(
        tmp_path, {"asr": {**wer, "sigma": 50, "num_samples": 4096, "models": {MODEL: [entry]}}}
    )
    ref = reference_for("asr", MODEL, "H100", "chat", path)
    assert ref.gate().threshold == pytest.approx(10.0 - AT_4096, abs=1e-5)
    assert ref.comparator == "<="


def test_an_unregistered_spec_names_what_is_registered(tmp_path: Path) -> None:
    path = write(tmp_path, mmlu({"sku": "H100", "accuracy": 68.0, "source": "s"}))
    with pytest.raises(NotRegistered, match=r"on A3 over chat .*registered .*: H100/chat"):
        reference_for("mmlu", MODEL, "A3", "chat", path)
    with pytest.raises(NotRegistered, match="registered for this suite and model: none"):
        reference_for("mmlu", "org/other", "H100", "chat", path)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"sku": "H100", "accuracy": 68.0, "source": "s", "quant_algo": "FP8"}, "a mapping of"),
        ({"accuracy": 68.0, "source": "s"}, r"\[0\]\.sku"),
        ({"sku": "H100", "accuracy": True, "source": "s"}, r"\.accuracy: a number"),
        ({"sku": "H100", "accuracy": 68.0}, r"\.source"),
        ({"sku": "H100", "protocol": "grpc", "accuracy": 68.0, "source": "s"}, "protocol: one of"),
        ({"sku": "H100", "accuracy": 68.0, "source": "s", "num_samples": 0}, "out of range"),
        ({"sku": "H100", "accuracy": 68.0, "source": "s", "alpha": 1.5}, "alpha: 1.5 is out"),
    ],
)
def test_a_malformed_entry_is_refused_naming_it(
    tmp_path: Path, entry: dict[str, object], says: str
) -> None:
    path = write(tmp_path, mmlu(entry))
    with pytest.raises(ReferenceError, match=rf"suites\.mmlu\.models\.{MODEL}.*{says}"):
        load_references(path)


def test_a_suite_without_its_test_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, {"mmlu": {**MMLU, "num_samples": 4096, "models": {}}})
    with pytest.raises(ReferenceError, match=r"suites\.mmlu\.sigma: a number"):
        load_references(path)
    (tmp_path / "bad.yaml").write_text("version: 2\nsuites: {}\n")
    with pytest.raises(ReferenceError, match="version: 1"):
        load_references(tmp_path / "bad.yaml")


def test_a_printed_entry_registers_what_it_says(tmp_path: Path) -> None:
    from omni_tasks.gates.design import mean_gate

    gate = mean_gate(0.02, 0.2, 0.4321987, 240, 0.2, "<=")
    text = entry_yaml(
        "seed_tts_en", MODEL, "H100", "realtime", "wer_mean", False, 0.19876, gate, "20 nights"
    )
    path = tmp_path / "mine.yaml"
    path.write_text("version: 1\n" + text)
    (ref,) = load_references(path)
    assert (ref.suite, ref.model, ref.sku, ref.protocol) == (
        "seed_tts_en",
        MODEL,
        "H100",
        "realtime",
    )
    assert (ref.accuracy, ref.sigma, ref.num_samples, ref.alpha) == (0.1988, 0.4322, 240, 0.02)
    assert ref.comparator == "<=" and ref.source == "20 nights"


def test_the_shipped_file_holds_each_suites_own_gate_figure() -> None:
    doc = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    load_references()  # well formed
    for suite, test in doc["suites"].items():
        figure = benchmarks.get(suite).gate_figure
        assert figure == (test["figure"], ">=" if test["higher_is_better"] else "<="), suite
