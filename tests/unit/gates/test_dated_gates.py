"""Upstream's gates with their dates: every night quoted in upstream's issues gets upstream's
own verdict from the table alone (no vllm-omni checkout), the realtime duplex gate is its own,
and an imported verdict names the entry it used (value, since, PR)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.gates.table import (
    CHAT,
    GateTableError,
    Threshold,
    UpstreamGate,
    gates_of,
    gates_on,
    load_table,
)
from omni_tasks.importers.buildkite import upstream_verdicts
from omni_tasks.series import Series
from tests.fakes.buildkite_fleet import daily_omni_doc

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"
WER, ACC, SIM = "seed_tts_content_error_mean", "daily_omni_accuracy", "seed_tts_sim_mean"
D = dt.date.fromisoformat


def threshold_on(
    series: Series, night: dt.date, *, protocol: str = CHAT, figure: str | None = None
) -> Threshold | None:
    """The entry upstream's test asserted for the series (on `figure`) on `night`, from the
    dated table alone (no checkout), as the import looks it up (`gates_on`)."""
    entries = [e for g, e in gates_on(series, night, protocol) if figure in (None, g.figure)]
    assert len(entries) <= 1, f"{series.label}: several gates that night, name a figure"
    return entries[0] if entries else None


# (upstream thread, benchmark, model, protocol, figure, night, figure's value,
#  upstream's verdict, threshold in force, the PR that set it)
NIGHTS = [
    # #3255 (build 8423): seed-TTS passed 0.5 where a table without dates says 0.35 ...
    ("#3255", "seed_tts_en", QWEN, "chat", WER, "2026-04-29", 0.4576, "pass", 0.5, None),
    # ... and Daily-Omni failed the CLI's 0.69, not the later CI override 0.685.
    ("#3255", "daily_omni", QWEN, "chat", ACC, "2026-04-29", 0.689223, "fail", 0.69, None),
    ("#3555", "seed_tts_en", QWEN, "chat", WER, "2026-05-12", 0.5342, "fail", 0.5, None),
    ("#5480", "seed_tts_en", QWEN, "chat", WER, "2026-07-28", 0.4036, "fail", 0.35, 4160),
    ("#6067", "seed_tts_en", QWEN, "chat", WER, "2026-08-12", 0.3840, "fail", 0.35, 4160),
    ("#6067", "seed_tts_en", QWEN, "chat", WER, "2026-08-13", 0.3737, "fail", 0.35, 4160),
    # #6887: NPU 932/1197 failed 0.78; after #7657 the same count passes 0.77.
    ("#6887", "daily_omni", MINICPM, "chat", ACC, "2026-09-08", 932 / 1197, "fail", 0.78, 5625),
    ("#7657", "daily_omni", MINICPM, "chat", ACC, "2026-09-17", 932 / 1197, "pass", 0.77, 7657),
    # #7701 (build 15365): native duplex judged at its own 0.05, not the chat 0.0156.
    (
        "#7701",
        "seed_tts_en",
        MINICPM,
        "realtime-duplex",
        WER,
        "2026-09-16",
        0.111185,
        "fail",
        0.05,
        7413,
    ),
]


@pytest.mark.parametrize(
    ("thread", "bench", "model", "protocol", "figure", "night", "value", "verdict", "at", "pr"),
    NIGHTS,
    ids=[f"{n[0]}-{n[1]}-{n[5]}" for n in NIGHTS],
)
def test_each_quoted_night_gets_upstreams_verdict_without_a_checkout(
    thread: str,
    bench: str,
    model: str,
    protocol: str,
    figure: str,
    night: str,
    value: float,
    verdict: str,
    at: float,
    pr: int | None,
) -> None:
    series = Series(bench, model)
    entry = threshold_on(series, D(night), protocol=protocol, figure=figure)
    assert entry is not None, f"{thread}: no gate in force"
    assert (entry.value, entry.pr) == (at, pr)
    (gate,) = [g for g in gates_of(series, protocol=protocol) if g.figure == figure]
    assert gate.verdict(value, entry.value) == verdict


def test_the_realtime_duplex_gate_is_its_own() -> None:
    night = D("2026-09-16")
    duplex = threshold_on(Series("seed_tts_en", MINICPM), night, protocol="realtime-duplex")
    chat_zh = threshold_on(Series("seed_tts_zh", MINICPM), night, figure=WER)
    assert duplex is not None and chat_zh is not None
    assert (duplex.value, chat_zh.value) == (0.05, 0.0156)
    # MiniCPM-o's English chat gate ended when #6108 moved the test to the zh split.
    assert threshold_on(Series("seed_tts_en", MINICPM), night) is None
    before = threshold_on(Series("seed_tts_en", MINICPM), D("2026-08-11"))
    assert before is not None and (before.value, before.until) == (0.05, D("2026-08-12"))
    # No gate before its first date.
    assert threshold_on(Series("daily_omni", MINICPM), D("2026-07-29")) is None


def test_every_shipped_entry_is_dated_with_its_source() -> None:
    for g in load_table():
        for t in g.history:
            assert t.since is not None and t.source, (g.benchmark, g.model, g.protocol, t)
    keys = [(g.benchmark, g.model, g.protocol, g.figure) for g in load_table()]
    assert len(keys) == len(set(keys))


def test_an_imported_verdict_names_the_entry_it_used(tmp_path: Path) -> None:
    doc = {**daily_omni_doc(932), "date": "20260908-021500"}
    path = tmp_path / "qwen_omni_acc_daily_omni_20260908-021500.json"
    path.write_text(json.dumps(doc))
    parsed = benchmarks.import_artifact(path, ImportOptions(branch="main"), "daily_omni")
    series = Series("daily_omni", MINICPM, "npu-a3")
    (v,) = upstream_verdicts(series, parsed, D("2026-09-08"))
    assert (v["verdict"], v["threshold"], v["threshold_source"]) == ("fail", 0.78, "gate table")
    assert v["gate_entry"]["pr"] == 5625 and v["gate_entry"]["since"] == "2026-07-31"
    # A realtime night of the chat suite is judged by the realtime gates only.
    assert upstream_verdicts(series, parsed, D("2026-09-08"), protocol="realtime") == []


def test_a_dated_entry_that_cannot_be_used_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "gates.yaml"
    head = "version: 1\ngates:\n  - {benchmark: b, model: m, figure: f, comparator: '<=', "
    for history, match in (
        ("[{threshold: 1, since: 2026-05-02, until: 2026-05-01}]", r"until must come after"),
        ("[{threshold: 1, since: 2026-05-01, pr: -3}]", "PR number"),
        ("[{threshold: 1, since: 2026-05-01, by: x}]", "unknown field"),
        (
            "[{threshold: 1, since: 2026-05-01, until: 2026-06-01}, "
            "{threshold: 2, since: 2026-05-15}]",
            "past the next entry",
        ),
    ):
        bad.write_text(head + f"history: {history}}}\n")
        with pytest.raises(GateTableError, match=match):
            load_table(bad)
    bad.write_text(head + "protocol: Chat, history: [{threshold: 1}]}\n")
    with pytest.raises(GateTableError, match="protocol"):
        load_table(bad)


def test_a_gate_built_in_code_keeps_its_old_shape() -> None:
    gate = UpstreamGate("b", "m", "f", "<=", (Threshold(0.5), Threshold(0.35, D("2026-06-05"))))
    assert gate.protocol == "chat" and gate.threshold_on(D("2026-01-01")) == 0.5
    assert gate.with_threshold(0.2).threshold == 0.2
