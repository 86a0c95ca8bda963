"""The bisection's budget chosen from the suite's MDE and the observed Δ, and what it says
when the budget rather than the evidence ended it (analysis/bisect.py; issue 65)."""

from __future__ import annotations

import math

from scipy.stats import norm

from bench.simlib import SEED_TTS, bisect_errors
from omni_tasks.analysis.bisect import (
    MAX_BUDGET,
    MIN_REPEATS,
    EndpointCheck,
    _unverified,
    chosen_budget,
)


def test_a_small_suites_large_step_gets_the_seeds_it_needs() -> None:
    """40 items, 20 regressed and 2 improved between the endpoints' runs (+45 points): three
    seeds a step of 2 endpoints and 4 midpoints on all 40 chosen items is 18 full runs."""
    budget, note = chosen_budget(4.0, 40, 40, 0, 16, regressed=20, improved=2)
    z = norm.ppf(1 - 0.05 / 4) + norm.ppf(0.95)
    seeds = max(MIN_REPEATS, math.ceil((z * math.sqrt(22 / 40 / 40) / (18 / 40)) ** 2))
    assert seeds == MIN_REPEATS
    assert budget == (2 + 4) * seeds * 40 / 40 == 18.0
    assert note is not None and "budget raised from 4 to 18 full runs" in note
    assert "+45-point step on 40 items" in note


def test_a_large_suites_step_keeps_the_configured_budget() -> None:
    """1,088 clips, a 2.1-point step (90 regressed, 67 improved), 150 chosen clips: three
    seeds cost about 2.5 full runs, under the default 4."""
    assert chosen_budget(4.0, 1088, 150, 0, 16, regressed=90, improved=67) == (4.0, None)


def test_no_step_or_one_the_suite_cannot_show_keeps_the_budget() -> None:
    assert chosen_budget(4.0, 40, 40, 0, 16, regressed=3, improved=5) == (4.0, None)
    # +1 item of 40 on 30 discordant: the MDE wants far more than MAX_REPEATS seeds
    assert chosen_budget(4.0, 40, 40, 0, 16, regressed=16, improved=15) == (4.0, None)


def test_the_raise_stops_at_max_budget() -> None:
    budget, note = chosen_budget(4.0, 100, 100, 200, 64, regressed=60, improved=0)
    assert budget == MAX_BUDGET and note is not None


def _check(worse: int, better: int, seeds: int, p: float) -> EndpointCheck:
    return EndpointCheck(tuple(range(seeds)), (0,) * seeds, (0,) * seeds, worse, better, p,
                         0.05 / seeds, False)  # fmt: skip


def test_a_check_the_budget_ended_says_undecided_not_no_regression() -> None:
    """Worse 14:3 over the one seed the budget bought (p .006, needs .05): at six seeds it
    would have verified, so the budget ended it."""
    text = _unverified(_check(14, 3, 1, 0.0064), cap=1, budget=1.0)
    assert text.startswith("undecided, budget spent")
    assert "14:3" in text and "1 seeds, all that 1 full runs buy" in text


def test_a_check_the_evidence_ended_says_no_regression() -> None:
    assert _unverified(_check(5, 6, 3, 0.7), cap=3, budget=4.0).startswith("no regression")
    # as worse as the budget one, but at the most seeds any budget buys: the evidence ended it
    assert _unverified(_check(14, 3, 6, 0.0064), cap=6, budget=9.0).startswith("no regression")


def test_a_40_item_suites_45_point_step_is_bisected_to_its_culprit() -> None:
    """The acceptance's small seeded suite: 40 seed-TTS-like items, a +45-point step at a
    random commit of 16, the endpoints' stored runs choosing, the budget from the MDE: the
    culprit named in at least 9 of 10 histories (the default budget of 4 alone sampled a few
    items and missed 4 of 30)."""
    e = bisect_errors(SEED_TTS.tail + 0.45, 10, seed=100, budget=4.0, model=SEED_TTS, n=40)
    assert e.histories - e.wrong_first_bad - e.no_regression >= 9
    assert max(e.full_runs) <= MAX_BUDGET
