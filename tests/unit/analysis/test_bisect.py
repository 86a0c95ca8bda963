"""The bisection's budget and the auto-bisect range (pure parts of analysis/bisect.py)."""

from __future__ import annotations

import datetime as dt

from omni_tasks.analysis.bisect import NightEvidence, bisect, bisect_range, repeat_cap
from omni_tasks.gates.policy import load_policy

D0 = dt.date(2027, 3, 1)
POLICY = load_policy()  # min_effect 2 points
RULES_OUT = (80, 4, 4, 1000)  # Δ 0
WIDE_SAME = (80, 20, 10, 978)  # SAME inside ±3 points at +0.9
REGRESSED = (80, 71, 9, 928)  # +5.7 points
QUIET = (80, 10, 10, 900)  # Δ 0 ± 0.45 points
HALFWAY = (80, 35, 10, 875)  # +2.5 points
BAD = (80, 65, 10, 845)  # +5.5 points


def _night(i: int, verdict: str, table: tuple[int, int, int, int] | None) -> NightEvidence:
    return NightEvidence(D0 + dt.timedelta(days=i), verdict, f"c{i}", table)


def test_the_budget_sets_the_repeat_cap() -> None:
    # 16 commits: 4 steps; per seed both endpoints and one midpoint per step on 186 clips.
    assert repeat_cap(4.0, 1088, 186, 0, 16) == 3
    assert repeat_cap(4.0, 1088, 186, 2 * 1088, 16) == 1  # fresh selection runs spend two
    assert repeat_cap(1.0, 1088, 186, 2 * 1088, 16) < 1  # nothing left: no bisect
    assert repeat_cap(100.0, 1088, 10, 0, 16) == 6  # never more than MAX_REPEATS


def _range(nights: list[NightEvidence]) -> tuple[str | None, str | None]:
    r = bisect_range(nights)
    return (r.last_good and r.last_good.commit_sha, r.first_bad and r.first_bad.commit_sha)


def test_a_clear_step_is_bracketed_by_the_nights_on_either_side_of_it() -> None:
    """Ten quiet nights (Δ 0, ±0.45 points) then three at +5.5 points: no other night fits."""
    nights = [_night(i, "REGRESSED", BAD) for i in (12, 11, 10)] + [
        _night(i, "UNKNOWN", QUIET) for i in range(9, -1, -1)
    ]
    assert _range(nights) == ("c9", "c10")


def test_a_night_between_the_two_levels_stays_inside_the_range() -> None:
    """Halfway (+2.5 points) is 5 standard errors from either level: the step may have entered
    on that night or the next, so the range spans it."""
    nights = [
        _night(8, "REGRESSED", BAD),
        _night(7, "REGRESSED", BAD),
        _night(6, "UNKNOWN", HALFWAY),
        *(_night(i, "SAME", QUIET) for i in range(5, -1, -1)),
    ]
    assert _range(nights) == ("c5", "c7")


def test_the_audits_same_night_inside_the_wide_margin_does_not_start_the_range() -> None:
    """The audit's example: SAME d0, REGRESSED d1 (the culprit), SAME at +0.9 points d2,
    REGRESSED d3 and d4. The old rule chose d2..d3 and missed d1."""
    nights = [
        _night(4, "REGRESSED", REGRESSED),
        _night(3, "REGRESSED", REGRESSED),
        _night(2, "SAME", WIDE_SAME),
        _night(1, "REGRESSED", REGRESSED),
        _night(0, "SAME", RULES_OUT),
    ]
    good, bad = _range(nights)
    assert good == "c0" and bad in ("c1", "c3")


def test_a_constant_offset_before_the_step_does_not_move_it() -> None:
    """Branches that differ by 1.4 points every night (never flagged) before a step to +5.5:
    the level before the step is fitted, not assumed zero."""
    offset = (80, 25, 10, 885)
    nights = [_night(i, "REGRESSED", BAD) for i in (12, 11, 10)] + [
        _night(i, "UNKNOWN", offset) for i in range(9, -1, -1)
    ]
    assert _range(nights) == ("c9", "c10")


def test_no_range_without_a_night_before_the_regressed_one() -> None:
    group_night = _night(-1, "SAME", None)  # a run-group night stores no paired table
    old = _night(-50, "SAME", QUIET)  # outside the six-week window
    assert _range([_night(0, "REGRESSED", BAD), group_night, old]) == (None, "c0")


def test_group_infra_and_commitless_nights_are_left_out_or_stepped_over() -> None:
    """Run-group nights (no table) and INFRA nights are not fitted; a first bad night without a
    commit gives way to the next one with one, a last good one to the one before."""
    nights = [
        _night(12, "REGRESSED", BAD),
        NightEvidence(D0 + dt.timedelta(days=11), "REGRESSED", None, BAD),
        _night(10, "INFRA", QUIET),
        _night(9, "SAME", None),
        NightEvidence(D0 + dt.timedelta(days=8), "UNKNOWN", None, QUIET),
        *(_night(i, "UNKNOWN", QUIET) for i in range(7, -1, -1)),
    ]
    assert _range(nights) == ("c7", "c12")


def test_only_the_window_before_the_alert_is_fitted() -> None:
    old_step = [_night(i, "REGRESSED", BAD) for i in range(-50, -60, -1)]
    nights = [_night(i, "REGRESSED", BAD) for i in (12, 11, 10)] + [
        _night(i, "UNKNOWN", QUIET) for i in range(9, -1, -1)
    ]
    r = bisect_range(nights + old_step)
    assert r.fitted == 13 and r.last_good is not None and r.last_good.commit_sha == "c9"


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


def test_the_issues_multiple_choice_reproduction_gets_a_range() -> None:
    """Issue 45 #2: three quiet nights at 300 questions, then (60,25,9,206), gave (None, c3):
    no bisection."""
    tables = [(60, 16, 14, 210), (60, 15, 15, 210), (60, 14, 16, 210)]
    nights = [_night(3, "REGRESSED", (60, 25, 9, 206))] + [
        _night(i, "UNKNOWN", t) for i, t in reversed(list(enumerate(tables)))
    ]
    good, bad = _range(nights)
    assert bad == "c3" and good in ("c0", "c1", "c2")
