"""The bisect job: fresh runs of the endpoints and midpoints, stored as `bisect` runs, with the
per-step evidence kept as events (and a reply in the alert's Slack thread when one is open)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from typing import Any

import psycopg
from pydantic import Field, model_validator

from omni_tasks.alerts import blocks, keys
from omni_tasks.analysis.accounting import is_broken
from omni_tasks.analysis.bisect import BisectResult, bisect
from omni_tasks.analysis.policy import load_policy
from omni_tasks.commits import full_commit
from omni_tasks.jobs.nightly import Serving, served
from omni_tasks.names import check_branch, check_name, require_trusted
from omni_tasks.store import alerts as store
from omni_tasks.store.runs import clip_records


class BisectParams(Serving):
    """A bisect's parameters (the DAG's trigger form, or the conf auto-bisect sends). A
    `vllm-serve` target launches each commit's own server as the nightly does (Serving)."""

    history: list[str] = Field(description="commits oldest (good) to newest (bad)")
    target: str = Field(
        description="vllm-serve, http(s)://… or simulator:PROFILE / simulator:commit-history"
    )
    branch: str = "rebase"
    baseline: str = "main"
    variant: str = "default"
    first_bad: str | None = Field(default=None, description="simulator:commit-history only")
    transcript_mode: bool = False
    dataset: str = "demo"
    limit: int | None = None
    seed: int = 1000
    alpha: float = 0.05
    max_repeats: int = 3
    control: int = 50
    benchmark: str | None = None
    grader: dict[str, Any] = Field(default_factory=dict)
    alert_id: int | None = Field(default=None, description="the alert whose thread gets the result")

    @model_validator(mode="after")
    def _checked(self) -> BisectParams:
        for branch in (self.branch, self.baseline):
            check_branch(branch)
        check_name(self.variant, "variant")
        if "/" in self.dataset or self.dataset.startswith("."):
            require_trusted(self.dataset, "dataset")
        self.check_serving()
        self.series  # noqa: B018 (a property that checks benchmark, model and lane)
        if len(self.history) < 2:
            raise ValueError("history: at least two commits (good first, bad last)")
        repo = self.commit_repo
        self.history = [full_commit(repo, c, f"history[{i}]") for i, c in enumerate(self.history)]
        if self.first_bad is not None:
            self.first_bad = full_commit(repo, self.first_bad, "first_bad")
        return self

    @property
    def bisect_id(self) -> str:
        blob = "|".join([*self.history, self.target, str(self.seed), self.dataset, str(self.limit)])
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


def run_bisect(conn: psycopg.Connection[Any], p: BisectParams, today: dt.date) -> BisectResult:
    from omni_tasks.benchmarks.run_seed_tts import BenchRequest, run_benchmark
    from omni_tasks.grading.asr import GraderSpec, load_grader

    tau = load_policy().primary_tau
    grader = None if p.transcript_mode else load_grader(GraderSpec.from_params(p.grader))

    def evaluate(commit: str, seed: int, clips: tuple[str, ...] | None) -> dict[str, bool]:
        part = (
            "all"
            if clips is None
            else "d" + hashlib.sha256(",".join(clips).encode()).hexdigest()[:6]
        )
        req = BenchRequest(
            target=p.target,
            branch=p.branch,
            dataset=p.dataset,
            commit=commit,
            seed=seed,
            limit=p.limit if clips is None else None,
            only=clips,
            nightly=today,
            trigger="bisect",
            variant=p.variant,
            transcript_mode=p.transcript_mode,
            benchmark=p.bench,
            history=tuple(p.history),
            first_bad=p.first_bad,
            overrides=p.overrides,
            run_key=f"bisect:{p.bisect_id}:{commit[:12]}:seed{seed}:{part}",
        )

        def run(r: BenchRequest) -> Any:
            return run_benchmark(conn, r, grader, show_progress=False)

        # A vllm-serve target: the commit's own server, launched for this run.
        outcome = served(conn, p, req, run) if p.target == "vllm-serve" else run(req)
        conn.commit()
        return {c.utt_id: is_broken(c, tau) for c in clip_records(conn, outcome.grading_id)}

    result = bisect(
        p.history,
        evaluate,
        seed=p.seed,
        alpha=p.alpha,
        max_repeats=p.max_repeats,
        control=p.control,
    )
    _record(conn, p, result, today)
    return result


def summary(p: BisectParams, r: BisectResult) -> str:
    lines = [
        f"bisect {p.bisect_id} ({p.branch}, {len(p.history)} commits): first bad commit "
        f"{r.first_bad} (last good {r.last_good}); {r.regressed} regressed : {r.improved} "
        f"improved clips between the endpoints, {len(r.discriminating)} clips per step, "
        f"{r.evaluations} runs"
    ]
    for s in r.steps:
        flag = " (forced at the repeat cap)" if s.forced else ""
        lines.append(
            f"  {s.commit[:12]} #{s.index}: {s.decision}{flag}, broken {list(s.broken)} "
            f"of {s.n_clips} at seeds {list(s.seeds)}, LLR {s.llr:+.1f}"
        )
    return "\n".join(lines + r.notes)


def _record(
    conn: psycopg.Connection[Any], p: BisectParams, r: BisectResult, today: dt.date
) -> None:
    when = dt.datetime.combine(today, dt.time(12), dt.UTC)
    text = summary(p, r)
    where: dict[str, Any] = {
        "time": when,
        "benchmark": p.bench,
        "branch": p.branch,
        "variant": p.variant,
    }
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
        text=f"first bad commit {r.first_bad}",
        tags=["bisect"],
        details={
            "summary": text,
            "first_bad": r.first_bad,
            "last_good": r.last_good,
            "discriminating": list(r.discriminating),
        },
        dedup_key=f"bisect_result|{p.bisect_id}",
    )
    pattern = keys.regression_pattern(p.series.key, p.branch, p.baseline, p.variant)
    alert = store.bisect_alert(conn, p.alert_id, pattern)
    if alert is not None:
        msg = blocks.note(text)
        key = f"{alert['alert_key']}|bisect|{p.bisect_id}"
        reply = {"op": "reply", **msg.to_payload()}
        store.enqueue(conn, key, alert["alert_id"], "reply", reply)
    conn.commit()
