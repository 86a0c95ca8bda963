"""The bisect job: the endpoints' stored nightly runs choose the clips (fresh runs when none is
on record), then fresh runs of the endpoints and midpoints on those clips, stored as `bisect`
runs, with the endpoint check and the per-step evidence kept as events (and a reply in the
alert's Slack thread when one is open)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import psycopg
from pydantic import Field, model_validator

from omni_tasks import benchmarks
from omni_tasks.alerts import blocks, keys
from omni_tasks.analysis.accounting import is_broken
from omni_tasks.analysis.bisect import BisectResult, bisect
from omni_tasks.analysis.discriminating import Outcomes
from omni_tasks.deployment.schema import GpuBudget, Serving, VenvEnvironment
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.nightly import run_on_target
from omni_tasks.store import alerts as store
from omni_tasks.store import runs
from omni_tasks.store.runs import clip_records
from omni_tasks.trust.commits import full_commit, is_full_sha

# Clips a hunt draws beside the regressed ones (analysis/discriminating.choose_clips).
ControlClips = Annotated[int, Field(ge=0, le=10_000)]


class HuntParams(Serving):
    """What a bisection and an ablation share: the regression's candidate and baseline branches,
    variant and data, the grader, and the alert whose Slack thread gets the result."""

    branch: str = "rebase"
    baseline: str = "main"
    variant: str = "default"
    dataset: str = "demo"
    benchmark: str | None = None
    grader: dict[str, Any] = Field(default_factory=dict)
    alert_id: int | None = Field(default=None, description="the alert whose thread gets the result")

    @model_validator(mode="after")
    def _run_fields(self) -> HuntParams:
        self.check_run_fields((self.branch, self.baseline), self.variant, self.dataset)
        return self


class BisectParams(HuntParams):
    """A bisect's parameters (the DAG's trigger form, or the conf auto-bisect sends). A
    `vllm-serve` target launches each commit's own server as the nightly does (Serving)."""

    history: list[str] = Field(description="commits oldest (good) to newest (bad)")
    axis: Literal["vllm-omni", "vllm"] = Field(
        default="vllm-omni",
        description="the repository bisected: vllm-omni commits (vLLM as environment.vllm "
        "says), or vLLM commits (from environment.vllm_index) with vllm-omni at omni_commit",
    )
    omni_commit: str | None = Field(
        default=None, description="axis vllm: the vllm-omni commit held fixed (full SHA)"
    )
    target: str = Field(
        description="vllm-serve, http(s)://… or simulator:PROFILE / simulator:commit-history"
    )
    first_bad: str | None = Field(default=None, description="simulator:commit-history only")
    limit: int | None = None
    seed: int = 1000
    alpha: float = 0.05
    budget: GpuBudget = Field(
        default=4.0,
        description="GPU this bisection may use, in full-run equivalents (clips run / clips); "
        "raised where a small suite's observed step needs more (analysis/bisect.chosen_budget)",
    )
    control: ControlClips = 50

    @model_validator(mode="after")
    def _checked(self) -> BisectParams:
        benchmarks.get(self.bench).require("bisect", "bisected")
        if len(self.history) < 2:
            raise ValueError("history: at least two commits (good first, bad last)")
        if self.axis == "vllm":
            # vLLM commits are not in the vllm-omni repo: full SHAs, each a wheel directory.
            env = self.environment
            if self.target != "vllm-serve" or not (
                isinstance(env, VenvEnvironment) and env.vllm_index
            ):
                raise ValueError("axis vllm: target vllm-serve with environment.vllm_index")
            for i, c in enumerate([*self.history, self.omni_commit]):
                if c is None or not is_full_sha(c):
                    what = "omni_commit" if i == len(self.history) else f"history[{i}]"
                    raise ValueError(f"{what}: a full 40-character commit SHA (axis vllm)")
            return self
        repo = self.commit_repo
        self.history = [full_commit(repo, c, f"history[{i}]") for i, c in enumerate(self.history)]
        if self.first_bad is not None:
            self.first_bad = full_commit(repo, self.first_bad, "first_bad")
        return self

    @property
    def bisect_id(self) -> str:
        """Names the bisection's runs and events: its commits and what runs them, and its
        series and variant, so the bisects one rebase starts (one per regressed series, each
        over the same commits) never share a run key."""
        blob = "|".join(
            [
                *self.history,
                self.target,
                str(self.seed),
                self.dataset,
                str(self.limit),
                self.axis,
                str(self.omni_commit),
                self.series.key,
                self.variant,
            ]
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


def stored_endpoints(
    conn: psycopg.Connection[Any], p: BisectParams
) -> tuple[tuple[dict[str, bool], dict[str, bool]], list[str], frozenset[int]] | None:
    """Both endpoints' stored nightly runs as broken-item maps (good, bad), with their run keys
    and seeds; None unless both are on record."""
    fingerprint = benchmarks.get(p.bench).subset_fingerprint(p.dataset, p.limit)
    tau = load_policy().primary_tau
    found = []
    for commit in (p.history[0], p.history[-1]):
        run = runs.endpoint_run(conn, p.series, p.variant, commit, fingerprint)
        if run is None:
            return None
        found.append(run)
    good, bad = (broken_items(conn, f["grading_id"], tau) for f in found)
    seeds = frozenset(int(f["seed"]) for f in found if f["seed"] is not None)
    return (good, bad), [str(f["run_key"]) for f in found], seeds


def run_bisect(conn: psycopg.Connection[Any], p: BisectParams, today: dt.date) -> BisectResult:
    """Bisect `p.history` on the series' family: each evaluation is one run of the family
    (`Benchmark.run`) on the chosen items, at one seed."""
    from omni_tasks.benchmarks.request import RunRequest

    tau = load_policy().primary_tau

    def evaluate(commit: str, seed: int, clips: tuple[str, ...] | None) -> dict[str, bool]:
        part = (
            "all"
            if clips is None
            else "d" + hashlib.sha256(",".join(clips).encode()).hexdigest()[:6]
        )
        generic = RunRequest(
            target=p.target,
            branch=p.branch,
            dataset=p.dataset,
            commit=p.omni_commit if p.axis == "vllm" else commit,
            seed=seed,
            limit=p.limit if clips is None else None,
            only=clips,
            nightly=today,
            trigger="bisect",
            variant=p.variant,
            benchmark=p.bench,
            model=p.series.model,
            lane=p.lane,
            history=tuple(p.history),
            first_bad=p.first_bad,
            overrides=p.overrides,
            run_key=f"bisect:{p.bisect_id}:{commit[:12]}:seed{seed}:{part}",
        )
        # A vllm-serve target: the commit's own server, launched for this run (axis vllm:
        # vllm-omni fixed, this vLLM commit's wheel installed).
        serving = (
            p.model_copy(update={"environment": p.environment.model_copy(update={"vllm": commit})})
            if p.axis == "vllm"
            else p
        )
        return outcomes(conn, run_on_target(conn, serving, generic, p.grader), tau)

    stored = stored_endpoints(conn, p) if p.axis == "vllm-omni" else None
    result = bisect(
        p.history,
        evaluate,
        seed=p.seed,
        alpha=p.alpha,
        budget=p.budget,
        control=p.control,
        stored=None if stored is None else stored[0],
        used_seeds=frozenset() if stored is None else stored[2],
    )
    _record(conn, p, result, today, [] if stored is None else stored[1])
    return result


def summary(p: BisectParams, r: BisectResult, selected_by: Sequence[str] = ()) -> str:
    found = (
        f"first bad commit {r.first_bad} (last good {r.last_good})"
        if r.first_bad is not None
        else "no commit named"
    )
    chosen = f" ({', '.join(selected_by)})" if selected_by else ""
    lines = [
        f"bisect {p.bisect_id} ({p.series.name}, variant {p.variant}, {p.branch}, "
        f"{len(p.history)} {p.axis} commits"
        + (f", vllm-omni at {p.omni_commit[:12]}" if p.omni_commit else "")
        + f"): {found}; "
        f"{r.regressed} regressed : {r.improved} improved clips between the endpoints' "
        f"{r.selection}{chosen}, {len(r.discriminating)} clips per run, {r.evaluations} runs, "
        f"{r.full_runs:.2f} full-run equivalents of {r.budget:g} (up to {r.repeat_cap} seeds "
        "a step)"
    ]
    if r.endpoints is not None:
        lines.append(f"  {r.endpoints.describe()}")
    for s in r.steps:
        flag = " (forced at the repeat cap)" if s.forced else ""
        lines.append(
            f"  {s.commit[:12]} #{s.index}: {s.decision}{flag}, broken {list(s.broken)} "
            f"of {s.n_clips} at seeds {list(s.seeds)}, LLR {s.llr:+.1f}"
        )
    return "\n".join(lines + r.notes)


def broken_items(conn: psycopg.Connection[Any], grading_id: int, tau: float) -> Outcomes:
    """Each item of a grading: broken at τ or not."""
    return {c.utt_id: is_broken(c, tau) for c in clip_records(conn, grading_id)}


def outcomes(conn: psycopg.Connection[Any], run_key: str, tau: float) -> Outcomes:
    """Each item of a run's latest grading: broken at τ or not."""
    grading_id, _ = runs.latest_grading(conn, runs.get_run(conn, run_key).run_id, run_key)
    return broken_items(conn, grading_id, tau)


def hunt_event(p: HuntParams, today: dt.date) -> dict[str, Any]:
    """Where a bisection's or an ablation's events are filed: noon of its day, on its series'
    benchmark, candidate branch and variant."""
    when = dt.datetime.combine(today, dt.time(12), dt.UTC)
    return {"time": when, "benchmark": p.bench, "branch": p.branch, "variant": p.variant}


def reply_in_thread(conn: psycopg.Connection[Any], p: HuntParams, key: str, text: str) -> None:
    """`text` as a reply in the thread of the regression alert a bisection or an ablation is
    about (the form's `alert_id`, else the series' open one), when there is one; `key` tells
    one reply from another in the alert's thread."""
    pattern = keys.regression_pattern(p.series.key, p.branch, p.baseline, p.variant)
    alert = store.bisect_alert(conn, p.alert_id, pattern)
    if alert is not None:
        reply = {"op": "reply", **blocks.note(text).to_payload()}
        store.enqueue(conn, f"{alert['alert_key']}|{key}", alert["alert_id"], "reply", reply)


def _record(
    conn: psycopg.Connection[Any],
    p: BisectParams,
    r: BisectResult,
    today: dt.date,
    selected_by: Sequence[str],
) -> None:
    text = summary(p, r, selected_by)
    where = hunt_event(p, today)
    for i, step in enumerate(r.steps):
        store.insert_event(
            conn,
            **where,
            kind="bisect_step",
            text=f"bisect step {i + 1}: {step.commit} {step.decision}",
            tags=["bisect"],
            details=dataclasses.asdict(step),
            dedup_key=f"bisect_step|{p.bisect_id}|{i}",
        )
    store.insert_event(
        conn,
        **where,
        kind="bisect_result",
        text=f"first bad commit {r.first_bad}" if r.first_bad is not None else r.notes[-1],
        tags=["bisect"],
        details={
            "summary": text,
            "series": p.series.key,
            "first_bad": r.first_bad,
            "last_good": r.last_good,
            "discriminating": list(r.discriminating),
            "selection": r.selection,
            "selected_by": list(selected_by),
            "endpoints": None if r.endpoints is None else dataclasses.asdict(r.endpoints),
            "full_runs": r.full_runs,
            "budget": r.budget,
            "axis": p.axis,
            "omni_commit": p.omni_commit,
        },
        dedup_key=f"bisect_result|{p.bisect_id}",
    )
    reply_in_thread(conn, p, f"bisect|{p.bisect_id}", text)
    conn.commit()
