"""Auto-bisect: after the gate, plan one `omni_bisect` run per confirmed regression.

For each open regression alert without a bisect yet, the range is the candidate branch's head
on the nights around where a single step fits the series (the change point's confidence set
over the six weeks up to the alert, analysis/change_point.py via analysis/bisect.py
`bisect_range`); the bisection's endpoint check then says whether the range holds a regression
at all. A bisect is planned when the repo shows more than one commit in `last_good..first_bad`,
the last good commit is an ancestor of the first bad one (no force-push) and the target can
serve every commit (`vllm-serve` or the simulator; a fixed URL serves one). The bisection keeps
to the configured budget in full-run equivalents, raised where a small suite's observed step
needs more (analysis/bisect.py `chosen_budget`). Whatever the outcome, the alert's thread says
it once, and the alert's details keep it, so a later night or a re-run of this one plans
nothing new. The trigger's run id is fixed per alert, so Airflow starts it once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import subprocess
from typing import Any

import psycopg

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks
from omni_tasks.analysis.bisect import RANGE_WINDOW_DAYS, NightEvidence, bisect_range
from omni_tasks.contracts import BisectPlan, JsonObject
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.store import alerts as store
from omni_tasks.store import decisions

BISECT_DAG = "omni_bisect"
ABLATE_DAG = "omni_ablate"
_SHA = re.compile(r"[0-9a-f]{7,40}")


def _git(repo: str, shas: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    """`git -C repo ARGS`, once each of `shas` is checked to be a commit SHA (never an
    option); its exit status is the caller's to read."""
    for sha in shas:
        if not _SHA.fullmatch(sha):
            raise ValueError(f"not a commit SHA: {sha!r}")
    argv = ["git", "-C", repo, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def commit_range(repo: str, good: str, bad: str) -> list[str] | None:
    """`good`, then the commits of good..bad oldest first (ending at `bad`); None when `good` is
    not an ancestor of `bad` (a force-push rewrote the branch)."""
    ancestor = _git(repo, (good, bad), "merge-base", "--is-ancestor", good, bad)
    if ancestor.returncode == 1:
        return None
    if ancestor.returncode != 0:
        raise RuntimeError(f"git merge-base in {repo}: {ancestor.stderr.strip()}")
    out = _git(repo, (), "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}")
    out.check_returncode()
    return [good, *out.stdout.split()]


def commit_author(repo: str, sha: str) -> str:
    """`Name <email>` and subject of one commit: a one-commit range goes to its author."""
    out = _git(repo, (sha,), "log", "-1", "--format=%an <%ae>%n%s", "--end-of-options", sha)
    out.check_returncode()
    author, _, subject = out.stdout.strip().partition("\n")
    return f"{author} ({subject})" if subject else author


def _decide(
    conn: psycopg.Connection[Any], params: NightlyParams, alert: store.OpenRegression, night: str
) -> BisectPlan:
    """The alert's bisect: triggered (with its DAG run's conf), or skipped and why."""
    branch = alert.candidate_branch
    if "bisect" not in benchmarks.get(params.bench).capabilities:
        family = benchmarks.get(params.bench).family
        why = f"{params.bench} ({family}) has no bisect capability: nothing to trigger"
        return BisectPlan(night, "skipped", why)
    nights = decisions.range_evidence(conn, alert.key, alert.opened_nightly)
    found = bisect_range(nights)
    good, bad = found.last_good, found.first_bad
    if bad is None or good is None or not bad.commit_sha or not good.commit_sha:
        why = (
            f"no night of {branch} with a commit and a paired table before the step in the "
            f"{RANGE_WINDOW_DAYS} days up to the alert, so no range"
        )
        return BisectPlan(night, "skipped", why)
    ends = BisectPlan(
        night,
        "skipped",
        last_good=good.commit_sha,
        first_bad=bad.commit_sha,
        last_good_night=str(good.nightly),
        first_bad_night=str(bad.nightly),
    )
    span = f"{good.commit_sha[:12]} ({good.nightly}) .. {bad.commit_sha[:12]} ({bad.nightly})"

    def skipped(why: str) -> BisectPlan:
        return dataclasses.replace(ends, why=why)

    if good.vllm and bad.vllm and good.vllm != bad.vllm:
        return _both_repositories(params, alert, good, bad, ends)
    if good.commit_sha == bad.commit_sha:
        return skipped(
            f"{branch} did not change between the last good and the first bad night "
            f"({span}): not a commit of {branch}"
        )
    if not params.repo:
        return skipped("no repo in the deployment config, so the range's commits are unknown")
    try:
        history = commit_range(params.repo, good.commit_sha, bad.commit_sha)
    except ValueError as exc:  # a head from the trigger form that is no commit SHA
        return skipped(f"{exc}, so the range cannot be listed")
    if history is None:
        return skipped(
            f"the last good commit is not an ancestor of the first bad one "
            f"({span}): the branch was rewritten (force-push), so no range"
        )
    if len(history) <= 2:
        author = commit_author(params.repo, bad.commit_sha)
        return dataclasses.replace(
            skipped(
                f"the range {span} is one commit, nothing to bisect: {bad.commit_sha[:12]} "
                f"by {author} is the first bad commit"
            ),
            author=author,
        )
    target = params.targets.get(branch)
    if not isinstance(target, str) or not (
        target == "vllm-serve" or target.startswith("simulator:")
    ):
        return skipped(
            f"{branch}'s target serves one commit (a URL); a bisect needs a server "
            "per commit (target vllm-serve)"
        )
    conf: JsonObject = {
        **_run_conf(params, alert),
        "history": list(history),
        "target": target,
        "limit": params.limit,
        "seed": params.seeds[0],
        "budget": params.auto_bisect.budget,
    }
    return dataclasses.replace(
        ends,
        status="triggered",
        commits=len(history) - 1,
        budget=params.auto_bisect.budget,
        trigger_dag_id=BISECT_DAG,
        trigger_run_id=f"auto_bisect__alert{alert.alert_id}",
        conf=conf,
    )


def _run_conf(params: NightlyParams, alert: store.OpenRegression) -> JsonObject:
    """What a triggered bisect or ablation takes from the series and the alert: choices within
    the forms' allow-list (the series' serving fields are the config's, found again there by
    benchmark, lane and model)."""
    # The model only where the config names it (the config's own value is what the form offers).
    named = "model" in params.server.model_fields_set
    return {
        "branch": alert.candidate_branch,
        "baseline": alert.baseline_branch,
        "variant": alert.key.variant,
        "benchmark": params.bench,
        "lane": params.lane,
        "dataset": params.dataset,
        **params.options,  # the family's run options, by their form names
        **({"server": {"model": params.server.model}} if named else {}),
        "alert_id": alert.alert_id,
    }


def _both_repositories(
    params: NightlyParams,
    alert: store.OpenRegression,
    good: NightEvidence,
    bad: NightEvidence,
    ends: BisectPlan,
) -> BisectPlan:
    """vLLM changed between the nights: which repository carries the regression is asked
    first (the two-repository A/B, omni_ablate) when vllm-omni changed too; a bisect of vLLM's
    own commits is named when it alone changed."""
    branch = alert.candidate_branch
    moved = f"vLLM {good.vllm} → {bad.vllm}"

    def skipped(why: str) -> BisectPlan:
        return dataclasses.replace(ends, why=why)

    if good.commit_sha == bad.commit_sha:
        return skipped(
            f"{moved} while {branch} stayed at {str(bad.commit_sha)[:12]}: bisect vLLM's "
            f"commits between them with `axis: vllm` ({BISECT_DAG}, omni_commit "
            f"{bad.commit_sha}, vLLM builds from environment.vllm_index)"
        )
    targets = [params.targets.get(branch), params.targets.get(alert.baseline_branch)]
    if targets != ["vllm-serve", "vllm-serve"]:
        return skipped(
            f"both repositories changed ({moved}, vllm-omni {str(good.commit_sha)[:12]} → "
            f"{str(bad.commit_sha)[:12]}); telling them apart needs vllm-serve targets "
            "(an environment per repository version)"
        )
    conf: JsonObject = {
        **_run_conf(params, alert),
        "nightly": str(bad.nightly),
        "candidate_target": "vllm-serve",
        "baseline_target": "vllm-serve",
        "ablations": [
            {"name": "vllm-at-last-good", "vllm": good.vllm, "why": f"vLLM back to {good.vllm}"},
            {
                "name": "vllm-omni-at-last-good",
                "commit": good.commit_sha,
                "why": f"vllm-omni back to {str(good.commit_sha)[:12]}",
            },
        ],
    }
    return dataclasses.replace(
        ends,
        status="attribution",
        vllm=(str(good.vllm), str(bad.vllm)),
        trigger_dag_id=ABLATE_DAG,
        trigger_run_id=f"auto_attribute__alert{alert.alert_id}",
        conf=conf,
    )


def _note(plan: BisectPlan) -> str:
    if plan.status == "skipped":
        return f"No automatic bisect: {plan.why}."
    last_good, first_bad = str(plan.last_good)[:12], str(plan.first_bad)[:12]
    if plan.status == "attribution" and plan.vllm is not None:
        old, new = plan.vllm
        return (
            f"Both repositories changed between {plan.last_good_night} and "
            f"{plan.first_bad_night}: vLLM {old} → {new} and vllm-omni "
            f"{last_good} → {first_bad}. The two-repository A/B runs "
            f"first (each taken back alone, on the night's clips): Airflow run `{ABLATE_DAG}` / "
            f"`{plan.trigger_run_id}`; it names the side that carries the regression, whose "
            "commits to bisect next."
        )
    return (
        f"Auto-bisect started: {plan.commits} commits after {last_good} "
        f"(good on {plan.last_good_night}) up to {first_bad} (bad on "
        f"{plan.first_bad_night}), within {plan.budget or 0:g} full-run equivalents of GPU, "
        "more where a small suite's step needs it (clips from the endpoints' stored runs; the "
        "endpoints are checked first). Airflow run "
        f"`{BISECT_DAG}` / `{plan.trigger_run_id}`; its result is replied here."
    )


def plan_bisects(
    conn: psycopg.Connection[Any], params: NightlyParams, nightly: dt.date
) -> list[JsonObject]:
    """TriggerDagRunOperator arguments, one per bisect planned on `nightly` (a re-run of the
    night gets the same ones back; Airflow skips a run id that exists)."""
    if not params.auto_bisect.enabled:
        return []
    triggers: list[JsonObject] = []
    with conn.transaction():
        for alert in store.open_regression_alerts(conn, params.series):
            plan = alert.details.bisect
            if plan is None:
                plan = _decide(conn, params, alert, nightly.isoformat())
                store.record_bisect(conn, alert.alert_id, plan)
                reply = {"op": "reply", **blocks.note(_note(plan)).to_payload()}
                key = f"{alert.alert_key}|auto-bisect"
                store.enqueue(conn, key, alert.alert_id, "reply", reply)
            if plan.status in ("triggered", "attribution") and plan.night == str(nightly):
                triggers.append(
                    {
                        "trigger_dag_id": plan.trigger_dag_id or BISECT_DAG,
                        "trigger_run_id": plan.trigger_run_id,
                        "conf": plan.conf,
                    }
                )
    return triggers
