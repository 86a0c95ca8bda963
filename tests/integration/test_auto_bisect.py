"""Auto-bisect: a confirmed regression's commit range is bisected once, only when it holds more
than one commit, from a night that rules the regression out, never across a force-push; the
thread says which."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_tasks.alerts.slack import SlackSink, dispatch
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.jobs.auto_bisect import plan_bisects
from omni_tasks.jobs.bisect import BisectParams
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import REGRESS, SAME, commit, git, git_repo, store_night
from tests.fakes.slack_api import SlackState, slack_app


def _repo(root: Path, n: int) -> tuple[Path, list[str]]:
    return root, git_repo(root, n, "rebase")


def _params(repo: Path, target: str = "vllm-serve") -> NightlyParams:
    return NightlyParams(
        branches=["main", "rebase"],
        repo=str(repo),
        seeds=[7],
        targets={"main": target, "rebase": target},
        auto_bisect={"enabled": True, "budget": 3.5},
    )


@pytest.fixture
def slack():
    state = SlackState()
    with serve_in_thread(slack_app(state)) as url:
        yield state, SlackSink("xoxb-test", "C0ALERTS", f"{url}/api/")


def test_a_multi_commit_regression_is_bisected_once(db, tmp_path: Path, slack) -> None:
    state, sink = slack
    repo, commits = _repo(tmp_path / "omni-home" / "repo", 6)
    good, bad = commits[1], commits[5]
    store_night(db, tmp_path, 0, SAME, candidate_commit=good)
    night = store_night(db, tmp_path, 1, REGRESS, candidate_commit=bad)  # confirmed at once
    params = _params(repo)

    (trigger,) = plan_bisects(db, params, night)
    assert trigger["trigger_run_id"] == "auto_bisect__alert1"
    assert trigger["trigger_dag_id"] == "omni_bisect"
    assert trigger["conf"]["history"] == commits[1:6]
    assert trigger["conf"]["target"] == "vllm-serve" and trigger["conf"]["alert_id"] == 1
    assert BisectParams(**trigger["conf"]).history == commits[1:6]  # what the bisect DAG reads
    assert trigger["conf"]["budget"] == 3.5  # full-run equivalents; the bisect sets its repeats
    # A re-run of the same night gets the same trigger back (Airflow skips the existing run id);
    # a later night of the still-open alert plans nothing.
    assert plan_bisects(db, params, night) == [trigger]
    later = store_night(db, tmp_path, 2, REGRESS, candidate_commit=bad)
    assert plan_bisects(db, params, later) == []

    dispatch(db, sink)
    parent = state.top_level()[0]["ts"]
    notes = [m["text"] for m in state.replies(parent) if "bisect" in m["text"].lower()]
    assert len(notes) == 1 and "Auto-bisect started: 4 commits" in notes[0]


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("one commit", "is one commit, nothing to bisect"),
        ("force-push", "not an ancestor of the first bad one"),
        ("nothing before", "no night of rebase with a commit and a paired table before the step"),
        ("url target", "needs a server per commit"),
        ("not a sha", "not a commit SHA: 'v1.2-good'"),
    ],
)
def test_no_bisect_and_the_thread_says_why(db, tmp_path: Path, slack, case: str, why: str) -> None:
    state, sink = slack
    repo, commits = _repo(tmp_path / "omni-home" / "repo", 6)
    good, bad = commits[4], commits[5]  # adjacent: one commit
    if case == "url target":
        good = commits[0]
    if case == "not a sha":  # a head typed into the trigger form
        good = "v1.2-good"
    if case == "one commit":  # the thread names who to ask
        good = bad
        bad = commit(repo, "talker: fuse the codec", author=("Ada Lovelace", "ada@example.org"))
    if case == "force-push":  # rewrite the branch: the good commit is no longer an ancestor
        git(repo, "reset", "-q", "--hard", commits[2])
        bad = commit(repo, "rewritten")
    if case != "nothing before":  # else the regressed night is the series' first
        store_night(db, tmp_path, 0, SAME, good)
    night = store_night(db, tmp_path, 1, REGRESS, candidate_commit=bad)
    params = _params(repo, target="http://gpu-host:8091" if case == "url target" else "vllm-serve")

    assert plan_bisects(db, params, night) == []
    details = db.execute("SELECT details FROM omni.alert").fetchone()["details"]
    assert details["bisect"]["status"] == "skipped" and why in details["bisect"]["why"]
    dispatch(db, sink)
    replies = [m["text"] for m in state.replies(state.top_level()[0]["ts"])]
    assert sum("No automatic bisect" in r for r in replies) == 1
    assert any(why in r for r in replies)
    if case == "one commit":
        # The email's dot gets a look-alike in Slack (commit metadata is data, never a link).
        assert any(
            "by Ada Lovelace &lt;ada@" in r and "(talker: fuse the codec)" in r for r in replies
        )
        author = "Ada Lovelace <ada@example.org> (talker: fuse the codec)"
        assert details["bisect"]["author"] == author


def test_disabled_by_default(db, tmp_path: Path) -> None:
    repo, commits = _repo(tmp_path / "omni-home" / "repo", 4)
    store_night(db, tmp_path, 0, SAME, candidate_commit=commits[0])
    night = store_night(db, tmp_path, 1, REGRESS, candidate_commit=commits[3])
    params = NightlyParams(repo=str(repo), targets={"main": "vllm-serve", "rebase": "vllm-serve"})
    assert plan_bisects(db, params, night) == []
    assert db.execute("SELECT details FROM omni.alert").fetchone()["details"]["bisect"] is None


def _set_vllm(db, night, branch: str, version: str) -> None:
    db.execute(
        "UPDATE omni.run SET stack = stack || jsonb_build_object('vllm', %s::text) "
        "WHERE nightly = %s AND branch = %s",
        (version, night, branch),
    )
    db.commit()


def test_both_repositories_changed_asks_which_first(db, tmp_path: Path, slack) -> None:
    """vLLM 0.27 → 0.28 and vllm-omni moved too: the two-repository A/B (omni_ablate, each
    repository taken back alone) is triggered instead of a bisect, and the thread says why."""
    from omni_tasks.jobs.ablate import AblateParams

    state, sink = slack
    repo, commits = _repo(tmp_path / "omni-home" / "repo", 6)
    good_night = store_night(db, tmp_path, 0, SAME, candidate_commit=commits[1])
    _set_vllm(db, good_night, "rebase", "0.27.0")
    night = store_night(db, tmp_path, 1, REGRESS, candidate_commit=commits[5])
    _set_vllm(db, night, "rebase", "0.28.0")
    (trigger,) = plan_bisects(db, _params(repo), night)
    assert trigger["trigger_dag_id"] == "omni_ablate"
    assert trigger["trigger_run_id"] == "auto_attribute__alert1"
    ablations = {a["name"]: a for a in trigger["conf"]["ablations"]}
    assert ablations["vllm-at-last-good"]["vllm"] == "0.27.0"
    assert ablations["vllm-omni-at-last-good"]["commit"] == commits[1]
    p = AblateParams(**trigger["conf"])  # what the ablate DAG reads
    assert p.nightly == night and [a.repository for a in p.ablations] == ["vLLM", "vllm-omni"]
    dispatch(db, sink)
    replies = [m["text"] for m in state.replies(state.top_level()[0]["ts"])]
    assert any("Both repositories changed" in r and "0.27.0 → 0.28.0" in r for r in replies)


def test_vllm_alone_changed_names_the_vllm_bisect(db, tmp_path: Path) -> None:
    repo, commits = _repo(tmp_path / "omni-home" / "repo", 3)
    good_night = store_night(db, tmp_path, 0, SAME, candidate_commit=commits[2])
    _set_vllm(db, good_night, "rebase", "0.27.0")
    night = store_night(db, tmp_path, 1, REGRESS, candidate_commit=commits[2])
    _set_vllm(db, night, "rebase", "0.28.0")
    assert plan_bisects(db, _params(repo), night) == []
    plan = db.execute("SELECT details FROM omni.alert").fetchone()["details"]["bisect"]
    assert plan["status"] == "skipped" and "axis: vllm" in plan["why"]
    assert "vLLM 0.27.0 → 0.28.0" in plan["why"]
