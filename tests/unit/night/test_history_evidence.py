"""History-aware evidence and run-level noise φ in the night's decision, from NightInputs built
by hand (no database): the history confirms a night McNemar alone does not, a drifted window
is refused with its reason, and φ > 1 widens a night that would otherwise confirm.

The items follow fixed patterns, so every figure below is countable by hand: 1,000 items, a
hard set of 200 each broken on a night when (item + night) mod 5 < 2 (rate .4, 80 broken a
night), the rest never broken. The candidate's own draw of the hard set differs from tonight's
baseline on 40 + 40 items; `extra` easy items break on the candidate only."""

from __future__ import annotations

import datetime as dt
from typing import Any

from omni_tasks.contracts import DecisionHistory
from omni_tasks.contracts.night import GradedRun, ItemHistory, KeyNight, NightInputs
from omni_tasks.gates.policy import load_policy
from omni_tasks.night import decide
from omni_tasks.records import ClipRecord, NightlyRun, StoredRun
from omni_tasks.series import Series
from tests.factories import D0

SERIES = Series("seed_tts_en")
POLICY = load_policy().for_benchmark("seed_tts_en")
N, HARD = 1000, 200
TONIGHT = D0 + dt.timedelta(days=30)


def broken_on(night: int, share: int = 2) -> set[int]:
    """The hard items broken on pattern night `night` (`share` of every 5)."""
    return {i for i in range(HARD) if (i + night) % 5 < share}


def graded(run_id: int, branch: str, broken: set[int]) -> tuple[NightlyRun, GradedRun]:
    key = f"{branch}-{run_id}"
    clips = [
        ClipRecord(
            utt_id=f"u{i:04d}",
            reference_text="the reference",
            synth_status="ok",
            grade_status="graded",
            wer=1.0 if i in broken else 0.0,
            hypothesis="heard",
        )
        for i in range(N)
    ]
    run = StoredRun(
        benchmark=SERIES.benchmark,
        nightly=TONIGHT,
        branch=branch,
        trigger="nightly",
        status="complete",
        n_expected=N,
        run_id=run_id,
        run_key=key,
        config_hash="h",
        content_hash="h",
        created_at=dt.datetime(2026, 12, 1),
    )
    row = NightlyRun(
        run_id=run_id,
        run_key=key,
        benchmark=SERIES.benchmark,
        model=SERIES.model,
        lane=SERIES.lane,
        branch=branch,
        variant="default",
        seed=None,
        status="complete",
        n_expected=N,
        dataset_fingerprint=None,
        prompt_fingerprint=None,
        execution_fingerprint=None,
        lineage={},
        grading_id=run_id + 1000,
        grader_id="grader",
    )
    return row, GradedRun(run, run_id + 1000, "grader", clips)


def item_history(patterns: list[set[int]]) -> ItemHistory:
    """The baseline's items over the nights before tonight, one broken set a night."""
    first = TONIGHT - dt.timedelta(days=len(patterns))
    return ItemHistory(
        tuple(
            (first + dt.timedelta(days=j), frozenset(f"u{i:04d}" for i in broken))
            for j, broken in enumerate(patterns)
        ),
        {f"u{i:04d}": len(patterns) for i in range(N)},
    )


QUIET_HISTORY = item_history([broken_on(j) for j in range(14)])


def prior(days_before: int, z: float) -> KeyNight:
    """An earlier night of the key: REGRESSED, not confirmed, a quiet paired table (so no
    pool of McNemar counts confirms), and a stored history z of `z` at Δ̂ 4 points."""
    return KeyNight(
        decision_id=10 + days_before,
        benchmark=SERIES.benchmark,
        model=SERIES.model,
        lane=SERIES.lane,
        policy_version=POLICY.policy_version,
        nightly=TONIGHT - dt.timedelta(days=days_before),
        candidate_branch="rebase",
        baseline_branch="main",
        variant="default",
        verdict="REGRESSED",
        confirmed=False,
        mcnemar_p_holm=1e-3,
        reasons=[],
        comparison=None,
        candidate_run_id=None,
        baseline_run_id=None,
        airflow_dag_id=None,
        airflow_run_id=None,
        regressed=4,
        improved=4,
        n_paired=N,
        paired=True,
        table=(80, 4, 4, 912),
        history=DecisionHistory(z, 0.04, N, 15, None, 1.0, 60),
    )


def inputs(extra: int, **kw: Any) -> NightInputs:
    base_row, base = graded(1, "main", broken_on(14))
    cand_row, cand = graded(2, "rebase", broken_on(15) | set(range(HARD, HARD + extra)))
    fields: dict[str, Any] = {
        "series": SERIES,
        "nightly": TONIGHT,
        "baseline_branch": "main",
        "expect": ("main", "rebase"),
        "policy_version": POLICY.policy_version,
        "runs": (base_row, cand_row),
        "graded": {base.run.run_key: base, cand.run.run_key: cand},
        "stats": {},
        "run_rows": {},
        "history": (),
        "openers": {},
        "open_alerts": {},
        "invalid_alerts": {},
        "groups": (),
        "lone": (),
        "audio": {},
        "next_alert_id": 1,
        "baseline_items": QUIET_HISTORY,
    }
    return NightInputs(**{**fields, **kw})


def tonight(night: NightInputs) -> Any:
    (row,) = decide(night, POLICY).decisions
    return row


def test_the_history_confirms_a_night_mcnemar_alone_does_not() -> None:
    # 80 : 40 discordant items is REGRESSED (p ≈ 1e-4) but far from confirm_p alone; against
    # the history the 40 extra items are z ≈ 40 / √(48 · (1 + 1/15)) ≈ 5.6, on top of five
    # earlier nights at z 6.
    earlier = tuple(prior(d, 6.0) for d in range(5, 0, -1))
    row = tonight(inputs(40, history=earlier))
    d = row.decision
    assert d.verdict == "REGRESSED" and d.confirmed
    assert any(r.startswith("confirmed by the history") for r in d.reasons)
    assert not any(r.startswith("confirmed by the paired rule") for r in d.reasons)
    assert d.history is not None and d.history.refused is None
    assert (d.history.n, d.history.nights) == (N, 15)
    assert abs(d.history.delta - 40 / N) < 1e-9  # the window's hard rates are exactly .4
    assert 5.0 < d.history.z < 6.0
    # Without the baseline's history the same night stays unconfirmed: McNemar alone.
    alone = tonight(inputs(40, history=earlier, baseline_items=ItemHistory())).decision
    assert alone.verdict == "REGRESSED" and not alone.confirmed
    assert alone.history is not None and alone.history.refused is not None
    assert any(r.startswith("history evidence refused: ") for r in alone.reasons)


def test_the_key_s_stored_z_accumulate_where_one_night_is_not_enough() -> None:
    # 70 : 40 is REGRESSED (p ≈ 3e-3); against the history its 30 extra items are z ≈ 4,
    # under the one-night bar (p 1e-5: z 4.26). Eight earlier nights' stored z of 3.5 carry
    # the detector over its threshold; without them the same night stays unconfirmed.
    earlier = tuple(prior(d, 3.5) for d in range(8, 0, -1))
    d = tonight(inputs(30, history=earlier)).decision
    assert d.history is not None and 3.5 < d.history.z < 4.26
    assert d.verdict == "REGRESSED" and d.confirmed
    assert any(r.startswith("confirmed by the history: CUSUM") for r in d.reasons)
    assert not tonight(inputs(30)).decision.confirmed


def test_a_drifted_window_is_refused_with_its_reason() -> None:
    # The hard set broke at .2 for seven nights, then at .6: 40 → 120 a night.
    drifted = item_history(
        [broken_on(j, 1) for j in range(7)] + [broken_on(j, 3) for j in range(7)]
    )
    earlier = tuple(prior(d, 6.0) for d in range(5, 0, -1))
    row = tonight(inputs(40, history=earlier, baseline_items=drifted))
    d = row.decision
    assert d.history is not None
    assert d.history.refused is not None and "drift" in d.history.refused
    assert f"history evidence refused: {d.history.refused}" in d.reasons
    assert f"history evidence refused: {d.history.refused}" in row.reasons  # as stored
    assert d.verdict == "REGRESSED" and not d.confirmed


def test_run_level_noise_widens_a_night_that_would_otherwise_confirm() -> None:
    # 160 : 40 discordant items: McNemar p ≈ 2e-18, confirmed alone at φ 1.
    plain = tonight(inputs(120)).decision
    assert plain.confirmed
    assert "confirmed by the paired rule (one night's or pooled nights' McNemar)" in plain.reasons
    # Baseline totals swinging 30 ↔ 130 around 80 a night: var ≈ 2,540 against Σp(1 − p) = 48,
    # so √φ ≈ 7 takes McNemar's z to ≈ 1.2 and the history's 16.8 to ≈ 2.3.
    totals = tuple((TONIGHT - dt.timedelta(days=59 - j), 30 if j % 2 else 130) for j in range(59))
    noisy = tonight(inputs(120, baseline_totals=totals))
    d = noisy.decision
    assert d.history is not None and d.history.phi_nights == 60
    assert d.history.phi > 45  # ≈ 50² / 48
    assert not d.confirmed  # neither the paired rule nor the history, each widened by √φ
    assert d.verdict == "REGRESSED"
    noise = next(r for r in d.reasons if r.startswith("run-level noise φ"))
    assert f"φ {d.history.phi:.2f} over 60 nights of baseline totals" in noise


def test_phi_is_assumed_one_on_too_few_nights_of_totals() -> None:
    few = ((TONIGHT - dt.timedelta(days=1), 52),)
    d = tonight(inputs(40, baseline_totals=few)).decision
    assert d.history is not None and (d.history.phi, d.history.phi_nights) == (1.0, 2)
    assert any("φ 1.00 assumed: 2 nights of baseline totals" in r for r in d.reasons)


def test_the_history_makes_regressed_a_night_mcnemar_leaves_short() -> None:
    # 63 : 40 discordant items: McNemar p ≈ .015, over α .01, so not REGRESSED by the pair.
    # Against the history the 23 extra items are z ≈ 23 / √(48 · (1 + 1/15)) ≈ 3.2, past
    # history_regress_p's 3.09 with Δ̂ 2.3 points: REGRESSED, which confirms nothing alone.
    d = tonight(inputs(23)).decision
    assert d.verdict == "REGRESSED" and not d.confirmed
    assert d.history is not None and 3.09 < d.history.z < 3.3
    lifted = next(r for r in d.reasons if r.startswith("REGRESSED by the history"))
    assert "Δ̂ +2.30 points over 1000 items" in lifted
    # Without the baseline's history McNemar's verdict stands; 21 extra items (z ≈ 2.9) stay
    # short of the history's bar too.
    assert tonight(inputs(23, baseline_items=ItemHistory())).decision.verdict != "REGRESSED"
    assert tonight(inputs(21)).decision.verdict != "REGRESSED"
