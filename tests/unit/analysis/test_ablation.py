"""Ablations repeat until decided (issue 45 #10): seeds are added a round at a time, α is split
over the rounds the budget could afford, and the result says what the budget bought."""

from __future__ import annotations

from bench.simlib import ONE_KNOB, ablation_costs
from omni_tasks.analysis.ablation import AblationBudget, ablate
from omni_tasks.gates.policy import load_policy

REGRESSED = [f"c{i}" for i in range(10)]
CONTROL = [f"k{i}" for i in range(10)]


def _runs(broken: dict[tuple[str, int], set[str]]):
    """An arm's run at a seed: the clips it breaks, from a table written by hand."""
    calls: list[tuple[str, int]] = []

    def evaluate(label: str, seed: int) -> dict[str, bool]:
        calls.append((label, seed))
        kind = "baseline" if label in ("baseline", "eager") else "candidate"
        bad = broken[(kind, seed)]
        return {u: u in bad for u in REGRESSED + CONTROL}

    return evaluate, calls


def test_a_regression_one_seed_cannot_show_is_decided_at_the_second() -> None:
    # Seed 1: the candidate breaks c0–c6, the baseline c0–c2: 4 against 0, p = 1/16, not
    # below α. Seed 2: 10 against 0; pooled 14 against 0, p = 2^-14 ≈ 6e-5.
    evaluate, calls = _runs(
        {
            ("baseline", 1): set(REGRESSED[:3]),
            ("candidate", 1): set(REGRESSED[:7]),
            ("baseline", 2): set(),
            ("candidate", 2): set(REGRESSED),
        }
    )
    # A full run is 1,000 clips; 20 chosen, four arms: the first round is 80 clips, a later one
    # at its cheapest 60, so 200 clips plan 1 + 120 // 60 = 3 rounds: α 0.01 / 3 each.
    budget = AblationBudget(0.2, 1000, 20, 4)
    assert budget.rounds == 3
    out = ablate(["eager", "other"], evaluate, seed=1, budget=budget, alpha=0.01, min_effect=0.02)
    assert out.seeds == (1, 2) and out.clips_run == 160
    assert out.reference.reproduced and out.reference.p_worse == 0.5**14
    verdicts = {v.name: v.verdict for v in out.verdicts}
    assert verdicts == {"eager": "regression gone", "other": "unchanged"}
    assert out.decided and abs(out.full_runs - 0.16) < 1e-12
    assert calls == [(a, s) for s in (1, 2) for a in ("baseline", "candidate", "eager", "other")]
    assert "3 planned" in out.arithmetic and "2 run: 160 clips" in out.arithmetic


def test_a_round_the_budget_cannot_hold_is_not_run() -> None:
    evaluate, calls = _runs(
        {("baseline", 1): set(REGRESSED[:3]), ("candidate", 1): set(REGRESSED[:7])}
    )
    # 100 clips: the first round (80) always runs; a second (at least 60) would not fit.
    budget = AblationBudget(0.1, 1000, 20, 4)
    out = ablate(["eager", "other"], evaluate, seed=1, budget=budget, alpha=0.01, min_effect=0.02)
    assert out.seeds == (1,) and len(calls) == 4
    assert not out.reference.reproduced and not out.decided
    assert {v.verdict for v in out.verdicts} == {"not reproduced"}


def test_a_decided_ablation_is_not_run_again() -> None:
    # Reproduced at seed 1 (10 against 0, p ≈ 1e-3); "eager" is gone at once, and "other"
    # breaks half the regressed clips: 5 against 0 either way (p 1/32), neither yet.
    broken = {
        ("baseline", 1): set(),
        ("candidate", 1): set(REGRESSED),
        ("other", 1): set(REGRESSED[:5]),
        ("baseline", 2): set(),
        ("candidate", 2): set(REGRESSED),
    }
    calls: list[tuple[str, int]] = []

    def evaluate(label: str, seed: int) -> dict[str, bool]:
        calls.append((label, seed))
        kind = {"eager": "baseline", "other": "other" if seed == 1 else "candidate"}
        bad = broken[(kind.get(label, label), seed)]
        return {u: u in bad for u in REGRESSED + CONTROL}

    budget = AblationBudget(0.2, 1000, 20, 4)
    out = ablate(["eager", "other"], evaluate, seed=1, budget=budget, alpha=0.01, min_effect=0.02)
    assert ("eager", 2) not in calls and ("other", 2) in calls
    assert out.seeds == (1, 2)
    verdicts = {v.name: v for v in out.verdicts}
    assert verdicts["eager"].verdict == "regression gone" and verdicts["eager"].n_clips == 20
    assert verdicts["other"].n_clips == 40  # both seeds pooled


def test_the_shipped_four_on_an_8_to_14_night_are_decided_within_one_full_run() -> None:
    """The job's own code on simulated confirmed nights at 1,088 clips (step_probabilities):
    one ablation takes the step away, three leave it."""
    r = ablation_costs(0.14, 40, seed=11, policy=load_policy().for_benchmark("seed_tts"))
    assert r.undecided == 0 and r.not_reproduced == 0
    assert max(r.full_runs) <= 1.0
    assert r.wrong <= 1  # of 160 verdicts, each a test at α = 0.01
    assert len(ONE_KNOB) == 4
