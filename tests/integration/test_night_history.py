"""The history evidence through the real store: `load` reads the baseline's nightly broken
totals (from stored statistics) and the key's stored history objects, and `write` keeps each
decision's history object, which the next night reads back and the report shows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from omni_tasks import night
from omni_tasks.analysis.accounting import is_broken
from omni_tasks.contracts.night import NightQuestion
from omni_tasks.gates.policy import load_policy
from omni_tasks.records import ClipAudio, ClipGrade, Grader, RunSpec
from omni_tasks.reports.html import nightly_report
from omni_tasks.series import Series
from omni_tasks.store import night as store
from omni_tasks.store.runs import clip_records, save_run
from tests.factories import D0, SAME, save_night, store_night

SERIES = Series.of({"benchmark": "seed_tts_en"})
# A SAME night's baseline breaks its stable-broken items and the ones the candidate improves.
BASELINE_BROKEN = SAME.stable_broken + SAME.improved


def test_load_reads_totals_and_history_and_write_stores_the_history(
    db: Any, tmp_path: Path
) -> None:
    for i in range(5):
        store_night(db, tmp_path, i, SAME)
    tonight = save_night(db, tmp_path, 5, SAME)
    policy = load_policy()
    question = NightQuestion(SERIES, tonight, "main", ("main", "rebase"))
    with db.transaction():
        inputs = store.load(db, question, policy)
        outcome = night.decide(inputs, policy)
        store.write(db, outcome)

    assert inputs.baseline_totals == tuple(
        (D0 + dt.timedelta(days=i), BASELINE_BROKEN) for i in range(5)
    )
    assert len(inputs.baseline_items.observed) == SAME.n
    assert set(inputs.baseline_items.observed.values()) == {5}
    assert [d for d, _ in inputs.baseline_items.broken] == [
        D0 + dt.timedelta(days=i) for i in range(5)
    ]
    # Each earlier night's history, as stored and read back: its window is its own earlier
    # nights and itself, refused under four nights.
    stored = {k.nightly: k.history for k in inputs.history}
    assert sorted(stored) == [D0 + dt.timedelta(days=i) for i in range(5)]
    for i, h in enumerate(stored[D0 + dt.timedelta(days=i)] for i in range(5)):
        assert h is not None and (h.n, h.nights, h.phi_nights) == (SAME.n, i + 1, i + 1)
        assert (h.refused is None) == (i + 1 >= 4)

    (row,) = outcome.decisions
    written = db.execute(
        "SELECT history, reasons FROM omni.gate_decision WHERE nightly = %s", (tonight,)
    ).fetchone()
    assert written["history"] is not None
    assert set(written["history"]) == {
        "z",
        "delta",
        "n",
        "nights",
        "refused",
        "phi",
        "phi_nights",
        "sd",
    }
    assert (written["history"]["n"], written["history"]["nights"]) == (SAME.n, 6)
    assert written["history"]["phi_nights"] == 6
    assert row.decision.history is not None
    assert written["history"] == row.decision.history.to_json()
    assert any(r.startswith("run-level noise φ") for r in written["reasons"])
    # The report shows φ and its window with the decision.
    page = nightly_report(db, SERIES, tonight, policy.primary_tau)
    assert "run-level noise φ" in page
    assert f"{written['history']['phi']:.2f} (6 nights)" in page


def test_the_history_reads_broken_as_is_broken_on_every_status(db: Any) -> None:
    """night_baseline_items.sql spells `is_broken` in SQL, so the window reads one row a night:
    on a baseline night with every synthesis status, grade status (or none), WER either side
    of τ and right/wrong answers, its broken set is what `is_broken` says of the records."""
    tau = load_policy().primary_tau
    synth = [
        "ok",
        "over_long",
        "no_audio",
        "timeout_partial",
        "timeout_no_output",
        "request_failed",
    ]
    grades = [
        (status, wer, incorrect)
        for status in ("graded", "empty_transcript", "grader_error")
        for wer in (None, 0.0, tau, tau + 0.01, 2.0)
        for incorrect in (None, True, False)
    ]
    audio, graded = [], []
    for s, status in enumerate(synth):
        for g, grade in enumerate([None, *grades]):
            utt = f"u{s}_{g:02d}"
            audio.append(ClipAudio(utt, len(audio), "ref", status))  # type: ignore[arg-type]
            if grade is not None:
                graded.append(ClipGrade(utt, grade[0], wer=grade[1], incorrect=grade[2]))  # type: ignore[arg-type]
    night_ = D0 + dt.timedelta(days=3)
    spec = RunSpec(
        benchmark=SERIES.benchmark,
        nightly=night_,
        branch="main",
        trigger="nightly",
        status="complete",
        n_expected=len(audio),
        model=SERIES.model,
        lane=SERIES.lane,
    )
    saved = save_run(db, spec, audio, (Grader("asr-test"), graded))
    db.commit()
    assert saved.grading_id is not None
    expected = {c.utt_id for c in clip_records(db, saved.grading_id) if is_broken(c, tau)}
    question = NightQuestion(SERIES, night_ + dt.timedelta(days=1), "main", ("main", "rebase"))
    with db.transaction():
        items = store.load(db, question, load_policy()).baseline_items
    assert items.broken == ((night_, frozenset(expected)),)
    assert items.observed == dict.fromkeys((a.utt_id for a in audio), 1)
    # both kinds occur, so the comparison is not vacuous
    assert 0 < len(expected) < len(audio)
    # The night's set was stored on that first read; the next read takes it from there.
    db.execute("DELETE FROM omni.clip_grade WHERE grading_id = %s", (saved.grading_id,))
    with db.transaction():
        assert store.load(db, question, load_policy()).baseline_items == items
