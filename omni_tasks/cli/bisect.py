"""Bisection of a regression between two commits, from the command line (the bisect DAG's
form runs the same job)."""

from __future__ import annotations

from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, json_out, say


@app.command("bisect")
def bisect_cmd(
    history: Annotated[
        list[str], typer.Argument(help="Commits, oldest (good) to newest (bad), at least two")
    ],
    target: Annotated[
        str,
        typer.Option(help="vllm-serve (each commit's own server), a URL, or simulator:PROFILE"),
    ],
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    branch: opt.CandidateOpt = "rebase",
    baseline: opt.BaselineOpt = "main",
    variant: opt.VariantOpt = "default",
    dataset: opt.DatasetOpt = "demo",
    limit: opt.LimitOpt = None,
    first_bad: Annotated[
        str | None, typer.Option(help="simulator:commit-history only: the planted first bad")
    ] = None,
    seed: Annotated[int, typer.Option(help="The first seed (repeats count up from it)")] = 1000,
    alpha: Annotated[float, typer.Option(help="Each step's error rate (SPRT)")] = 0.05,
    budget: Annotated[
        float, typer.Option(help="GPU it may use, in full-run equivalents (items run / items)")
    ] = 4.0,
    control: Annotated[int, typer.Option(help="Control items (fine at both ends)")] = 50,
    transcript: opt.TranscriptOpt = False,
    nightly: opt.NightlyOpt = None,
    alert_id: opt.AlertThreadOpt = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Find the first bad commit of a regression: the endpoints choose the items that
    discriminate (their stored nightly runs, else fresh runs), then each midpoint is run on
    those items at repeated seeds until a sequential test decides good or bad. Any family with
    the bisect capability (`benchmarks list`). Exit 1 when it cannot run."""
    from omni_tasks.benchmarks.request import BenchError
    from omni_tasks.jobs.bisect import BisectParams, run_bisect, summary

    p = opt.validated(
        BisectParams,
        "bisect",
        history=history,
        target=target,
        branch=branch,
        baseline=baseline,
        variant=variant,
        dataset=dataset,
        limit=limit,
        first_bad=first_bad,
        seed=seed,
        alpha=alpha,
        budget=budget,
        control=control,
        alert_id=alert_id,
        **opt.series_fields(benchmark, model, lane, transcript),
    )
    day = opt.night_or_today(nightly)
    result = opt.on_db(lambda conn: run_bisect(conn, p, day), BenchError)
    if as_json:
        json_out(
            {
                "bisect_id": p.bisect_id,
                "first_bad": result.first_bad,
                "last_good": result.last_good,
                "discriminating": list(result.discriminating),
                "evaluations": result.evaluations,
                "full_runs": result.full_runs,
            }
        )
        return
    say(f"bisect {p.bisect_id}: {result.evaluations} runs stored")
    console.print(summary(p, result), soft_wrap=True)
