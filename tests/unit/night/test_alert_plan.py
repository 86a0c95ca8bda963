"""The alert lifecycle planned from NightInputs fixtures (no database): open, still, held,
resolve, withdraw, infra, an invalid mark, a backfill's replay and a group. The integration
smoke of each path is tests/integration/test_alerts.py and test_alert_groups.py; the whole
outcome's spelling is pinned by tests/integration/test_night_golden.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from typing import Any

from scipy.stats import norm
from scipy.stats import t as student_t

from omni_tasks.contracts import (
    AlertDetails,
    DecisionHistory,
    StoredAlert,
    Triage,
    TriageEntry,
)
from omni_tasks.contracts.night import GroupMemberRow, KeyNight, NightInputs
from omni_tasks.gates.policy import load_policy
from omni_tasks.night import alert_plan
from omni_tasks.records import NightRun
from omni_tasks.series import Series
from tests.factories import D0

SERIES = Series("seed_tts_en")
POLICY = load_policy().for_benchmark("seed_tts_en")
KEY = f"{SERIES.key}|rebase|main|default|tail_fraction@0.5"
INFRA_KEY = f"{SERIES.key}|rebase|main|default|infra"
QUIET = (80, 4, 4, 1000)  # n11, n12, n21, n22: a SAME night's paired table


def night(i: int, verdict: str, confirmed: bool = False, **kw: Any) -> KeyNight:
    fields: dict[str, Any] = {
        "decision_id": 100 + i,
        **SERIES.args(),
        "policy_version": POLICY.policy_version,
        "nightly": D0 + dt.timedelta(days=i),
        "candidate_branch": "rebase",
        "baseline_branch": "main",
        "variant": "default",
        "verdict": verdict,
        "confirmed": confirmed,
        "mcnemar_p_holm": 1e-6 if verdict == "REGRESSED" else 0.5,
        "reasons": [f"{verdict} because"],
        "regressed": 4,
        "improved": 4,
        "n_paired": 1088,
        "m": 1,
        "paired": True,
        "table": QUIET if verdict != "INFRA" else None,
        "commit_sha": f"c{i}",
        "vllm": None,
        "tau": 0.5,
        "candidate_run_id": 500 + i,
    }
    return KeyNight(**{**fields, **kw})


def run(k: KeyNight) -> NightRun:
    """The candidate run a night's decision names (its commit is what an alert covers)."""
    assert k.candidate_run_id is not None
    return NightRun(
        benchmark=SERIES.benchmark,
        nightly=k.nightly,
        branch=k.candidate_branch,
        trigger="nightly",
        status="complete",
        n_expected=1088,
        commit_sha=k.commit_sha,
        run_id=k.candidate_run_id,
        run_key=f"run-{k.candidate_run_id}",
        config_hash="h",
        content_hash="h",
        created_at=dt.datetime(2026, 11, 1),
    )


def alert(alert_id: int, key: str, opened: int, last: int, **kw: Any) -> StoredAlert:
    fields: dict[str, Any] = {
        "alert_id": alert_id,
        "alert_key": key,
        "kind": "regression",
        "state": "open",
        "opened_nightly": D0 + dt.timedelta(days=opened),
        "last_nightly": D0 + dt.timedelta(days=last),
        "resolved_nightly": None,
        "channel": None,
        "parent_ts": None,
        "details": AlertDetails(decision_id=100 + opened, commits=[f"c{opened}"]),
        "created_at": dt.datetime(2026, 11, 1),
        "group_id": None,
        "range_from": None,
        "range_to": None,
        "hold_until": None,
        "thread_ts": None,
    }
    return StoredAlert(**{**fields, **kw})


def inputs(tonight: int, nights: list[KeyNight], **kw: Any) -> NightInputs:
    fields: dict[str, Any] = {
        "series": SERIES,
        "nightly": D0 + dt.timedelta(days=tonight),
        "baseline_branch": "main",
        "expect": ("main", "rebase"),
        "sim_margin": None,
        "policy_version": POLICY.policy_version,
        "runs": (),
        "graded": {},
        "stats": {},
        "history": tuple(nights),
        "openers": {},
        "open_alerts": {},
        "invalid_alerts": {},
        "groups": (),
        "lone": (),
        "audio": {},
        "next_alert_id": 7,
        "run_rows": {k.candidate_run_id: run(k) for k in nights if k.candidate_run_id},
    }
    return NightInputs(**{**fields, **kw})


def plan(tonight: int, nights: list[KeyNight], **kw: Any) -> alert_plan.Book:
    return alert_plan.plan(inputs(tonight, nights, **kw), nights, POLICY)


def test_a_confirmed_regression_opens_an_alert_under_the_next_id() -> None:
    book = plan(0, [night(0, "REGRESSED", confirmed=True)])
    assert [(t.kind, t.alert_id) for t in book.transitions] == [("open", 7)]
    assert [(op.op, op.alert_id, op.alert_key) for op in book.ops][:1] == [("insert", 7, KEY)]
    (post,) = book.messages
    assert (post.idempotency_key, post.alert_id, post.kind) == (f"{KEY}|{D0}|open", 7, "post")
    assert "omni-tasks alerts ack 7" in str(post.payload["blocks"])
    assert [e.kind for e in book.events] == ["regression_opened"]


def test_an_unconfirmed_regression_plans_nothing() -> None:
    book = plan(0, [night(0, "REGRESSED", confirmed=False)])
    assert book.transitions == [] and book.messages == [] and book.ops == []


def test_another_regressed_night_updates_and_replies() -> None:
    nights = [night(0, "REGRESSED", True), night(1, "REGRESSED", True)]
    book = plan(1, nights, open_alerts={KEY: alert(3, KEY, 0, 0)})
    assert [t.kind for t in book.transitions] == ["still"]
    assert [m.idempotency_key for m in book.messages] == [
        f"{KEY}|{D0 + dt.timedelta(days=1)}|update",
        f"{KEY}|{D0 + dt.timedelta(days=1)}|reply",
    ]
    assert "2 nights" in str(book.messages[0].payload["text"])
    (touch,) = book.ops
    assert (touch.op, touch.commits) == ("touch", ["c0", "c1"])


def test_one_quiet_night_holds_and_three_resolve() -> None:
    nights = [night(0, "REGRESSED", True)] + [night(i, "SAME") for i in (1, 2, 3)]
    held = plan(1, nights[:2], open_alerts={KEY: alert(3, KEY, 0, 0)})
    assert [t.kind for t in held.transitions] == ["held"]
    assert "still open — 1 night(s)" in str(held.messages[0].payload["text"])
    done = plan(3, nights, open_alerts={KEY: alert(3, KEY, 0, 0)})  # held nights touch nothing
    assert [t.kind for t in done.transitions] == ["resolve"]
    assert [op.op for op in done.ops] == ["resolve"]
    assert [e.kind for e in done.events] == ["regression_resolved"]


def test_an_alert_whose_opening_night_is_no_longer_confirmed_is_withdrawn() -> None:
    nights = [night(0, "REGRESSED", confirmed=False), night(1, "SAME")]
    book = plan(1, nights, open_alerts={KEY: alert(3, KEY, 0, 0)})
    assert [t.kind for t in book.transitions][:1] == ["withdraw"]
    assert "now REGRESSED, not confirmed" in book.transitions[0].detail
    assert f"{KEY}|{D0}|withdrawn-reply" in [m.idempotency_key for m in book.messages]


def test_infra_opens_its_own_alert_and_the_next_decided_night_clears_it() -> None:
    opened = plan(0, [night(0, "INFRA")])
    assert [(t.kind, t.detail, t.alert_key) for t in opened.transitions] == [
        ("infra", "opened", INFRA_KEY)
    ]
    infra = alert(7, INFRA_KEY, 0, 0, kind="infra", details=AlertDetails())
    cleared = plan(1, [night(0, "INFRA"), night(1, "SAME")], open_alerts={INFRA_KEY: infra})
    assert [(t.kind, t.detail) for t in cleared.transitions] == [("infra", "cleared")]
    assert "was decided again (verdict SAME)" in str(cleared.messages[0].payload["text"])


def test_an_alert_marked_invalid_reopens_only_on_a_new_commit() -> None:
    entry = TriageEntry("invalid", "ana", "2026-11-02T10:00:00")
    closed = alert(
        3,
        KEY,
        0,
        0,
        state="resolved",
        details=AlertDetails(100, ["c0"], triage=Triage("invalid", [entry])),
    )
    same = plan(1, [night(1, "REGRESSED", True, commit_sha="c0")], invalid_alerts={KEY: closed})
    assert same.transitions == []
    new = plan(1, [night(1, "REGRESSED", True, commit_sha="c9")], invalid_alerts={KEY: closed})
    assert [t.kind for t in new.transitions] == ["open"]


def test_a_backfilled_night_replays_the_nights_after_it() -> None:
    """Night 1 is decided late; night 2 (already stored, now confirmed) opens its alert."""
    nights = [night(1, "UNKNOWN"), night(2, "REGRESSED", confirmed=True)]
    book = plan(1, nights)
    assert [(t.kind, t.nightly) for t in book.transitions] == [("open", D0 + dt.timedelta(days=2))]
    assert book.ops[0].details == AlertDetails(decision_id=102, commits=["c2"])


def test_a_regression_overlapping_another_series_lone_alert_forms_a_group() -> None:
    other_series = Series("seed_tts_zh")
    other_key = f"{other_series.key}|rebase|main|default|tail_fraction@0.5"
    lone = alert(
        4,
        other_key,
        0,
        0,
        range_from=D0 - dt.timedelta(days=1),
        range_to=D0,
        details=AlertDetails(summary="Δ +6 pts", first_bad="c0"),
    )
    member = GroupMemberRow(lone, other_series, "rebase", "main")
    book = plan(0, [night(0, "REGRESSED", True, commit_sha=None)], lone=(member,))
    assert [(op.op, op.alert_id) for op in book.ops] == [
        ("insert", 7),
        ("member_range", 7),
        ("insert", 8),
        ("join", 4),
        ("join", 7),
    ]
    group_post = next(m for m in book.messages if m.alert_id == 8)
    assert group_post.idempotency_key == f"group|rebase|main|{D0}|post"
    assert "2 regressions in 2 series" in str(group_post.payload["text"])
    assert dataclasses.replace(book.transitions[0], detail="").group_id == 8


def test_a_regressed_night_short_of_a_restart_joins_the_streak() -> None:
    """Unconfirmed REGRESSED at Holm p .004 under φ 2 (60 nights of totals): widened by √φ on
    Student's t, p is far above the restart level, so the night neither restarts the streak
    nor is left out of it; at p 1e-6 it holds up, and the alert is still regressed. Without
    φ, p .004 is REGRESSED at α yet short of a restart; p .001 restarts."""
    noisy = DecisionHistory(
        z=0.5, delta=0.01, n=1088, nights=15, refused=None, phi=2, phi_nights=60
    )
    restart = POLICY.resolve_restart_alpha
    assert student_t.sf(norm.isf(0.004) / math.sqrt(2), 59) > POLICY.alpha
    assert student_t.sf(norm.isf(1e-6) / math.sqrt(2), 59) < restart
    assert 0.001 < restart < 0.004 < POLICY.alpha
    head = [night(0, "REGRESSED", True), night(1, "SAME"), night(2, "SAME")]
    table = (80, 20, 6, 982)

    def planned(p: float, history: DecisionHistory | None) -> alert_plan.Book:
        tonight = night(3, "REGRESSED", mcnemar_p_holm=p, history=history, table=table)
        return plan(3, [*head, tonight], open_alerts={KEY: alert(3, KEY, 0, 0)})

    book = planned(0.004, noisy)
    assert [t.kind for t in book.transitions] == ["resolve"]
    assert "REGRESSED within noise" in str(book.messages[-1].payload)
    assert [t.kind for t in planned(1e-6, noisy).transitions] == ["still"]
    assert [t.kind for t in planned(0.004, None).transitions] == ["resolve"]
    assert [t.kind for t in planned(0.001, None).transitions] == ["still"]
