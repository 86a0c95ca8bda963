"""The bisection's budget and the auto-bisect range (pure parts of analysis/bisect.py)."""

from __future__ import annotations

import datetime as dt
import math
from statistics import NormalDist

from omni_tasks.analysis.bisect import NightEvidence, bisect, bisect_range, repeat_cap
from omni_tasks.gates.policy import load_policy

D0 = dt.date(2027, 3, 1)
POLICY = load_policy()  # min_effect 2 points
RULES_OUT = (80, 4, 4, 1000)  # Δ 0, 99.9 % upper bound < 1 point
WIDE_SAME = (80, 20, 10, 978)  # SAME inside ±3 points, yet its 99.9 % bound is above 2 points
REGRESSED = (80, 71, 9, 928)


def _night(i: int, verdict: str, table: tuple[int, int, int, int] | None) -> NightEvidence:
    return NightEvidence(D0 + dt.timedelta(days=i), verdict, f"c{i}", table)


def test_the_budget_sets_the_repeat_cap() -> None:
    # 16 commits: 4 steps; per seed both endpoints and one midpoint per step on 186 clips.
    assert repeat_cap(4.0, 1088, 186, 0, 16) == 3
    assert repeat_cap(4.0, 1088, 186, 2 * 1088, 16) == 1  # fresh selection runs spend two
    assert repeat_cap(1.0, 1088, 186, 2 * 1088, 16) < 1  # nothing left: no bisect
    assert repeat_cap(100.0, 1088, 10, 0, 16) == 6  # never more than MAX_REPEATS


def test_a_same_night_inside_the_wide_margin_does_not_start_the_range() -> None:
    """The audit's example: SAME d0, REGRESSED d1 (the culprit), SAME d2, REGRESSED d3 and d4.
    The old rule chose d2..d3 and missed d1; d2 cannot rule a 2-point step out, so the range
    starts at d0 and the endpoint check decides."""
    nights = [
        _night(4, "REGRESSED", REGRESSED),
        _night(3, "REGRESSED", REGRESSED),
        _night(2, "SAME", WIDE_SAME),
        _night(1, "REGRESSED", REGRESSED),
        _night(0, "SAME", RULES_OUT),
    ]
    good, bad = bisect_range(nights, POLICY)
    assert (good and good.commit_sha, bad and bad.commit_sha) == ("c0", "c3")


def test_unknown_and_infra_nights_stay_inside_the_streak() -> None:
    nights = [
        _night(3, "REGRESSED", REGRESSED),
        _night(2, "UNKNOWN", WIDE_SAME),
        _night(1, "REGRESSED", REGRESSED),
        _night(0, "SAME", RULES_OUT),
    ]
    good, bad = bisect_range(nights, POLICY)
    assert good is not None and bad is not None
    assert (good.commit_sha, bad.commit_sha) == ("c0", "c1")


def test_no_range_when_nothing_in_the_window_rules_out() -> None:
    group_night = _night(-1, "SAME", None)  # a run-group night stores no paired table
    old = _night(-30, "SAME", RULES_OUT)  # outside the two-week window
    nights = [_night(0, "REGRESSED", REGRESSED), group_night, _night(-2, "SAME", WIDE_SAME), old]
    good, bad = bisect_range(nights, POLICY)
    assert good is None and bad is not None and bad.commit_sha == "c0"


def _runs(bad_clips: set[str]):
    clips = [f"u{i}" for i in range(40)]

    def evaluate(commit: str, seed: int, only: tuple[str, ...] | None) -> dict[str, bool]:
        return {u: commit >= "c2" and u in bad_clips for u in (only or clips)}

    return clips, evaluate


def test_the_endpoint_check_refuses_endpoints_that_do_not_differ_on_fresh_runs() -> None:
    """Stored runs that disagree by chance choose clips, but fresh runs show nothing: no commit
    is named, and the result says why."""
    clips, evaluate = _runs(set())
    stored_good = dict.fromkeys(clips, False)
    stored_bad = {u: u in {"u1", "u2", "u3"} for u in clips}
    r = bisect(["c0", "c1", "c2", "c3"], evaluate, stored=(stored_good, stored_bad), budget=4)
    assert r.first_bad is None and r.steps == []
    assert r.endpoints is not None and not r.endpoints.verified
    assert "no regression between these endpoints" in r.notes[0]
    assert r.selection == "stored runs" and r.clips_run == 2 * len(r.endpoints.seeds) * 40


def test_a_real_step_is_verified_then_bisected() -> None:
    _, evaluate = _runs({f"u{i}" for i in range(12)})
    stored = (evaluate("c0", 0, None), evaluate("c3", 0, None))
    r = bisect(["c0", "c1", "c2", "c3"], evaluate, stored=stored, budget=4)
    assert r.endpoints is not None and r.endpoints.verified and r.endpoints.worse == 12
    assert (r.last_good, r.first_bad) == ("c1", "c2")
    assert r.full_runs <= 4 and r.repeat_cap == 1  # 40 clips, all chosen: 4 runs a seed


def test_a_server_that_breaks_most_clips_is_still_bisected() -> None:
    """90 % of 1,088 clips break from commit 9 of 16: the chosen clips are too many for one
    seed within the budget, so a sample of them is bisected instead of none (the audit found
    no bisection and an event saying there was no regression)."""
    history = [f"c{i:02d}" for i in range(16)]
    clips = [f"u{i:04d}" for i in range(1088)]

    def evaluate(commit: str, seed: int, chosen: tuple[str, ...] | None) -> dict[str, bool]:
        bad = history.index(commit) >= 9
        return {u: bad and int(u[1:]) % 10 != 0 for u in (chosen or clips)}

    r = bisect(history, evaluate, seed=1, budget=4.0)
    assert (r.first_bad, r.last_good) == ("c09", "c08")
    assert r.full_runs <= 4.0 and len(r.discriminating) < r.regressed
    assert any("sampled to fit" in n for n in r.notes)


def test_the_check_and_the_steps_never_rerun_a_seed_that_chose_the_clips() -> None:
    """Nightly seeds [s, s+1] (the README's example): the stored endpoint run at s+1 chose the
    clips; a check at s+1 would replay it exactly and confirm whatever it chose."""
    history = [f"c{i:02d}" for i in range(8)]
    clips = [f"u{i:03d}" for i in range(400)]
    seeds: set[int] = set()

    def evaluate(commit: str, seed: int, chosen: tuple[str, ...] | None) -> dict[str, bool]:
        seeds.add(seed)
        bad = history.index(commit) >= 5
        return {u: bad and int(u[1:]) % 7 == 0 for u in (chosen or clips)}

    good = {u: False for u in clips}
    bad = {u: int(u[1:]) % 7 == 0 for u in clips}
    r = bisect(history, evaluate, seed=1000, stored=(good, bad), used_seeds=frozenset({1001}))
    assert r.first_bad == "c05" and r.endpoints is not None
    assert 1001 not in seeds and 1001 not in r.endpoints.seeds and seeds


def test_quiet_small_nights_pooled_start_the_range_at_their_oldest() -> None:
    """Issue 45: a range's last good night rules out what the series could have flagged, the
    larger of min_effect and one night's REGRESSED threshold z(1 − α)·√(ψ/n) (4.2 points at
    300 questions, ψ .1), at 99.9 %. One quiet night's bound, z(.9995)·√(ψ/n) ≈ 6 points, is
    above it; three pooled (≈ 3.5) are below: the range starts at the run's oldest night, so a
    culprit hidden among them stays inside it."""
    quiet = (60, 15, 15, 210)
    z = NormalDist().inv_cdf
    floor = max(POLICY.min_effect, z(1 - POLICY.alpha) * math.sqrt(0.1 / 300))
    assert z(0.9995) * math.sqrt(0.1 / 300) > floor > z(0.9995) * math.sqrt(0.1 / 900)
    first_bad = _night(7, "REGRESSED", (60, 25, 9, 206))
    one = [first_bad, _night(6, "UNKNOWN", quiet)]
    assert bisect_range(one, POLICY) == (None, first_bad)
    three = [first_bad] + [_night(i, "UNKNOWN", quiet) for i in (6, 5, 4)]
    good, bad = bisect_range(three, POLICY)
    assert bad is not None and bad.commit_sha == "c7"
    assert good is not None and good.commit_sha == "c4"
    broken = [first_bad, _night(6, "UNKNOWN", quiet),
              _night(5, "REGRESSED", (60, 25, 9, 206))] + [
        _night(i, "UNKNOWN", quiet) for i in range(4, -1, -1)
    ]  # fmt: skip
    good, bad = bisect_range(broken, POLICY)
    # c6 alone cannot end the streak, so c5 is its first bad night; two nights after it sit at
    # the floor (z(.9995) ≈ √2·z(.99)), three clear it.
    assert bad is not None and bad.commit_sha == "c5"
    assert good is not None and good.commit_sha == "c2"


def test_the_issues_multiple_choice_reproduction_gets_a_range() -> None:
    """Issue 45 #2: three quiet nights at 300 questions, then (60,25,9,206), gave (None, c3):
    no bisection. The quiet nights pooled now rule out what such a series can flag."""
    policy = load_policy().for_benchmark("daily_omni")
    tables = [(60, 16, 14, 210), (60, 15, 15, 210), (60, 14, 16, 210)]
    nights = [_night(3, "REGRESSED", (60, 25, 9, 206))] + [
        _night(i, "UNKNOWN", t) for i, t in reversed(list(enumerate(tables)))
    ]
    good, bad = bisect_range(nights, policy)
    assert bad is not None and bad.commit_sha == "c3"
    assert good is not None and good.commit_sha in ("c0", "c1", "c2")
