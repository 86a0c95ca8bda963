"""The standing-failure ledger against the simulator's planted truth (issue 69's acceptance):
14 nights of main on the `ledger-planted` profile, the last six after a commit that fixes
about half of its chronic set (`ledger-planted-fixed`). The truth is read from the profiles
(their own hash rules), never from the ledger."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from omni_tasks.benchmarks.seed_tts.run import BenchRequest, run_benchmark
from omni_tasks.ledger.states import LedgerPolicy
from omni_tasks.series import Series
from omni_tasks.store import ledger
from omni_tasks.synthesis.profiles import load_profile
from tests.factories import D0, seed_tts_corpus

NIGHTS = 14
FIX_NIGHT = 8  # nights 0-7 run the planted model, 8-13 the fixing commit and after
ITEMS = 500
COMMITS = [f"{i:02d}" + "ab" * 19 for i in range(NIGHTS)]  # one commit a night, 40 hex digits
SERIES = Series("seed_tts_en")


def _texts(corpus: Path) -> dict[str, str]:
    lines = (corpus / "meta.lst").read_text().splitlines()
    return {line.split("|")[0]: line.split("|")[3] for line in lines}


def _precision_recall(found: set[str], truth: set[str]) -> tuple[float, float]:
    hit = len(found & truth)
    return hit / max(len(found), 1), hit / max(len(truth), 1)


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seed_tts_corpus(tmp_path_factory.mktemp("ledger") / "corpus", ITEMS)


def _run_nights(db: Any, corpus: Path, n: int = NIGHTS) -> None:
    for i in range(n):
        profile = "ledger-planted" if i < FIX_NIGHT else "ledger-planted-fixed"
        req = BenchRequest(
            target=f"simulator:{profile}",
            branch="main",
            dataset=str(corpus),
            commit=COMMITS[i],
            seed=100 + i,  # a seed a night: flaky items and background failures vary
            nightly=D0 + dt.timedelta(days=i),
            trigger="nightly",
            transcript_mode=True,
        )
        run_benchmark(db, req, None, show_progress=False)
        db.commit()


def test_the_ledger_recovers_the_planted_standing_failures(db, nights: Path) -> None:
    texts = _texts(nights)
    before, after = load_profile("ledger-planted"), load_profile("ledger-planted-fixed")
    planted = {u: e for u, t in texts.items() if (e := before.chronic_event(t)) is not None}
    fixed = {u for u in planted if after.chronic_event(texts[u]) is None}
    flaky = {u for u, t in texts.items() if before.is_flaky(t)}
    assert len(planted) >= 25 and 0.3 < len(fixed) / len(planted) < 0.7 and len(flaky) >= 10
    _run_nights(db, nights)

    # The first eight nights: the whole planted set is chronic.
    early = ledger.load(db, SERIES, branch="main", nights=NIGHTS, until=D0 + dt.timedelta(7))
    assert (early.first_night, early.last_night) == (D0, D0 + dt.timedelta(7))
    chronic = {i.utt_id: i for i in early.state("chronic", "new")}
    precision, recall = _precision_recall(set(chronic), set(planted))
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    # Its modes as planted: the task text spoken aloud, or the sentence answered; both are
    # the thinker's (its text is what was heard).
    for utt in set(chronic) & set(planted):
        item = chronic[utt]
        assert item.mode == "over_generation" and item.origin == "thinker", item
        if planted[utt] == "task_leak":
            assert item.leak_share == 1.0, item
        else:
            assert item.leak_share == 0.0, item
    # Questions are planted chronic far more often (0.3 against 0.04): over-represented.
    (question,) = [g for g in early.groups if (g.key, g.value) == ("kind", "question")]
    assert question.chronic / question.chronic_total > question.suite / question.suite_total
    assert question.p < 1e-3

    # All fourteen: the unfixed half stays chronic, the fixed half is named with its commits.
    late = ledger.load(db, SERIES, branch="main", nights=NIGHTS)
    still = {i.utt_id for i in late.state("chronic", "new")}
    precision, recall = _precision_recall(still, set(planted) - fixed)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    named = {i.utt_id: i for i in late.state("fixed")}
    precision, recall = _precision_recall(set(named), fixed)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    for utt in set(named) & fixed:  # the range ends at the fixing commit
        assert named[utt].commit_range == (COMMITS[FIX_NIGHT - 1], COMMITS[FIX_NIGHT])
    # The planted flaky items are never chronic, and most show as flaky.
    states = {i.utt_id: i.state for i in late.items}
    assert not {u for u in flaky if states.get(u) in ("chronic", "new", "fixed")}
    assert sum(states.get(u) == "flaky" for u in flaky) >= 0.8 * len(flaky)

    # The panels' view holds the last night's chronic set; one item's history reads back.
    rows = db.execute(
        "SELECT utt_id FROM omni.v_ledger_chronic WHERE nightly = %s AND series_key = %s",
        (late.last_night, SERIES.key),
    ).fetchall()
    assert {r["utt_id"] for r in rows} == still
    one = sorted(fixed)[0]
    history = ledger.item_nights(db, SERIES, branch="main", utt_id=one, nights=NIGHTS)
    assert [n.broken for n in history] == [True] * FIX_NIGHT + [False] * (NIGHTS - FIX_NIGHT)
    assert [n.commit_sha for n in history] == COMMITS


def test_nights_are_read_once_and_again_only_when_their_reading_changes(db, tmp_path: Path) -> None:
    _run_nights(db, seed_tts_corpus(tmp_path / "small", 40), 3)
    read = "SELECT night_id, tau, xmin::text AS xmin FROM omni.ledger_night ORDER BY nightly"
    ledger.load(db, SERIES, branch="main", nights=3)
    db.commit()
    first = db.execute(read).fetchall()
    assert len(first) == 3
    ledger.load(db, SERIES, branch="main", nights=3)  # nothing new: no night is read again
    db.commit()
    assert db.execute(read).fetchall() == first
    # Another tau is another reading of each night of the window (and only of those).
    strict = ledger.load(db, SERIES, branch="main", nights=2, policy=LedgerPolicy(tau=5.0))
    assert [r["tau"] for r in db.execute(read).fetchall()] == [0.5, 5.0, 5.0]
    assert strict.first_night == D0 + dt.timedelta(1)
    assert ledger.series_for(db, "seed_tts_en") == [SERIES]
    assert ledger.series_for(db, "seed_tts_en", lane="rocm-mi300") == []


def test_an_item_chronic_on_another_lane_says_so(db, tmp_path: Path) -> None:
    corpus = seed_tts_corpus(tmp_path / "lanes", 120)
    lanes = [Series("seed_tts_en", lane="cuda-h100x2"), Series("seed_tts_en", lane="rocm-mi300")]
    for i in range(7):
        for series in lanes:
            req = BenchRequest(
                target="simulator:ledger-planted",
                branch="main",
                dataset=str(corpus),
                lane=series.lane,
                commit=COMMITS[i],
                seed=100 + i,
                nightly=D0 + dt.timedelta(days=i),
                trigger="nightly",
                transcript_mode=True,
            )
            run_benchmark(db, req, None, show_progress=False)
            db.commit()
    first = ledger.load(db, lanes[0], branch="main", nights=7)
    second = ledger.load(db, lanes[1], branch="main", nights=7)
    on_first = {i.utt_id for i in first.state("chronic", "new")}
    assert on_first  # the planted set is the same items on both lanes
    for item in second.items:
        assert item.elsewhere == ((lanes[0].key,) if item.utt_id in on_first else ()), item
    assert all(i.elsewhere == () for i in first.items)  # the second lane's ledger came later
    assert ledger.series_for(db, "seed_tts_en", lane="rocm-mi300") == [lanes[1]]
