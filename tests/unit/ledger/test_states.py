"""The ledger's rules, with expectations computed by hand (or, for the Jeffreys bounds, by a
numerical integral of the Beta density that shares no code with scipy's quantile)."""

from __future__ import annotations

import datetime as dt
import math
from math import comb

import pytest

from omni_tasks.ledger.groups import item_groups, shares
from omni_tasks.ledger.model import ItemNight, LedgerItem
from omni_tasks.ledger.states import (
    LedgerPolicy,
    change_night,
    classify,
    clean,
    jeffreys,
    outcome,
)
from omni_tasks.records import ClipRecord

D0 = dt.date(2026, 11, 1)
POLICY = LedgerPolicy()


def _nights(pattern: str, commits: list[str | None] | None = None) -> list[ItemNight]:
    """'1' broken, '0' fine, one a night from D0; commit c<i> unless given."""
    shas = commits or [f"c{i}" for i in range(len(pattern))]
    return [
        ItemNight(
            D0 + dt.timedelta(days=i),
            shas[i],
            ch == "1",
            "over_generation" if ch == "1" else None,
            "thinker" if ch == "1" else None,
            ch == "1" and i % 2 == 0,
        )
        for i, ch in enumerate(pattern)
    ]


def _beta_cdf(x: float, a: float, b: float, steps: int = 200_000) -> float:
    """∫0^x Beta(a, b) density by the midpoint rule after t = u², which removes the density's
    u^(a−1) singularity at 0 for a = ½ (the Jeffreys prior's)."""
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    top = math.sqrt(x)
    h = top / steps
    total = 0.0
    for i in range(steps):
        t = (i + 0.5) * h
        u = t * t
        total += 2 * t * math.exp(log_norm + (a - 1) * math.log(u) + (b - 1) * math.log1p(-u))
    return total * h


@pytest.mark.parametrize(("k", "n"), [(7, 7), (5, 7), (3, 14)])
def test_jeffreys_bounds_hold_their_tails(k: int, n: int) -> None:
    low, high = jeffreys(k, n)
    assert _beta_cdf(low, k + 0.5, n - k + 0.5) == pytest.approx(0.025, abs=2e-4)
    if k < n:
        assert _beta_cdf(high, k + 0.5, n - k + 0.5) == pytest.approx(0.975, abs=2e-4)


def test_jeffreys_ends_are_zero_and_one() -> None:
    assert jeffreys(0, 10)[0] == 0.0
    assert jeffreys(10, 10)[1] == 1.0
    assert jeffreys(0, 0) == (0.0, 1.0)


def test_broken_every_night_is_chronic_with_its_mode_and_leak_share() -> None:
    item = classify("u1", _nights("1" * 14), POLICY, {"kind": "question"})
    assert item.state == "chronic"
    assert (item.broken, item.nights, item.rate) == (14, 14, 1.0)
    assert item.first_broken == D0 and item.last_broken == D0 + dt.timedelta(days=13)
    assert (item.mode, item.origin) == ("over_generation", "thinker")
    assert item.leak_share == 7 / 14  # the even nights leaked
    assert item.groups == {"kind": "question"}
    assert item.since is None and item.commit_range is None


def test_too_few_nights_are_never_chronic() -> None:
    assert classify("u1", _nights("1" * 6), POLICY).state == "flaky"  # 6 < min_nights 7


def test_half_broken_is_flaky_and_never_broken_is_clean() -> None:
    assert classify("u1", _nights("10" * 7), POLICY).state == "flaky"
    clean = classify("u1", _nights("0" * 14), POLICY)
    assert clean.state == "clean" and clean.mode is None and clean.leak_share == 0.0


def test_a_clean_item_without_its_nights_reads_as_with_them() -> None:
    assert clean("u1", 14, POLICY, {"kind": "statement"}) == classify(
        "u1", _nights("0" * 14), POLICY, {"kind": "statement"}
    )


def test_a_fix_is_named_with_the_commits_either_side() -> None:
    item = classify("u1", _nights("1" * 7 + "0" * 7), POLICY)
    assert item.state == "fixed"
    assert item.commit_range == ("c6", "c7")  # last bad night's commit, first good night's


def test_a_fix_range_skips_nights_without_a_commit() -> None:
    commits: list[str | None] = [f"c{i}" for i in range(14)]
    commits[6] = commits[7] = None
    item = classify("u1", _nights("1" * 7 + "0" * 7, commits), POLICY)
    assert item.commit_range == ("c5", "c8")


def test_the_change_test_is_fishers_one_sided_tail() -> None:
    # 7 of 7 broken before, 0 of 7 after: p = 1 / C(14, 7) = 0.00029 < 0.01.
    assert change_night([True] * 7 + [False] * 7, POLICY, down=True) == 7
    # The same step held to p < 1e-4 is not significant.
    strict = LedgerPolicy(change_p=1e-4)
    assert 1 / comb(14, 7) > 1e-4
    assert change_night([True] * 7 + [False] * 7, strict, down=True) is None


def test_a_new_chronic_item_says_since_when_and_the_range() -> None:
    item = classify("u1", _nights("0" * 7 + "1" * 7), POLICY)
    assert item.state == "new"
    assert item.since == D0 + dt.timedelta(days=7)
    assert item.commit_range == ("c6", "c7")  # last good, first bad


def test_group_shares_use_the_hypergeometric_tail() -> None:
    def item(i: int, state: str, kind: str) -> LedgerItem:
        return LedgerItem(
            f"u{i}", state, 0, 14, 0.0, 1.0, None, None, None, None, 0.0, groups={"kind": kind}
        )

    kinds = ["question"] * 3 + ["statement"] * 7
    states = ["chronic", "new"] + ["clean"] * 8  # both chronic items are questions
    got = {
        (g.key, g.value): g
        for g in shares([item(i, s, k) for i, (s, k) in enumerate(zip(states, kinds, strict=True))])
    }
    q = got[("kind", "question")]
    assert (q.chronic, q.chronic_total, q.suite, q.suite_total) == (2, 2, 3, 10)
    assert q.p == pytest.approx(comb(3, 2) / comb(10, 2))  # 3/45: both drawn are questions
    assert got[("kind", "statement")].p == pytest.approx(1.0)  # 0 or more: certain


def test_an_item_is_grouped_by_what_its_grade_stores() -> None:
    read = ClipRecord(
        "u1", "Could you tell me where the station is?", "ok", "graded", 0.0, is_question=True
    )
    assert item_groups(read) == {"kind": "question", "length": "short"}
    long = ClipRecord("u2", " ".join(["word"] * 17) + ".", "ok", "graded", 0.0)
    assert item_groups(long) == {"kind": "statement", "length": "long"}
    choice = ClipRecord(
        "q1",
        "",
        "ok",
        "graded",
        None,
        incorrect=True,
        breakdown={"category": "sports", "task": "count"},
    )
    assert item_groups(choice) == {"category": "sports", "task": "count"}


def test_an_items_night_outcome() -> None:
    infra = ClipRecord("u1", "a b c d", "request_failed", None, None)
    assert outcome(infra, 0.5) is None
    wrong = ClipRecord("q1", "", "ok", "graded", None, incorrect=True)
    assert outcome(wrong, 0.5) == (True, "wrong_answer", None, False)
    leaked = ClipRecord(
        "u2",
        "a b c d",
        "ok",
        "graded",
        2.0,
        ref_words=4,
        hyp_words=12,
        thinker_wer=2.0,
        task_leak=True,
    )
    assert outcome(leaked, 0.5) == (True, "over_generation", "thinker", True)
    fine = ClipRecord("u3", "a b c d", "ok", "graded", 0.0, ref_words=4, hyp_words=4)
    assert outcome(fine, 0.5) == (False, None, None, False)
