"""Bisection of a regression between two commits, from the command line (the bisect DAG's
form runs the same job)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer

from omni_tasks.cli.common import (
    TRANSCRIPT,
    BenchmarkOpt,
    JsonFlag,
    LaneOpt,
    ServedModelOpt,
    TranscriptOpt,
    app,
    console,
    err,
    fail,
    json_out,
    open_db,
    parse_date,
    run_options,
)


@app.command("bisect")
def bisect_cmd(
    history: Annotated[
        list[str], typer.Argument(help="Commits, oldest (good) to newest (bad), at least two")
    ],
    target: Annotated[
        str,
        typer.Option(help="vllm-serve (each commit's own server), a URL, or simulator:PROFILE"),
    ],
    benchmark: BenchmarkOpt = None,
    model: ServedModelOpt = None,
    lane: LaneOpt = None,
    branch: Annotated[str, typer.Option(metavar="BRANCH", help="The candidate branch")] = "rebase",
    baseline: Annotated[str, typer.Option(metavar="BRANCH", help="The baseline branch")] = "main",
    variant: Annotated[str, typer.Option(help="Variant")] = "default",
    dataset: Annotated[
        str, typer.Option(metavar="DIR", help="demo or the series' dataset root")
    ] = "demo",
    limit: Annotated[int | None, typer.Option(help="Only the first N items")] = None,
    first_bad: Annotated[
        str | None, typer.Option(help="simulator:commit-history only: the planted first bad")
    ] = None,
    seed: Annotated[int, typer.Option(help="The first seed (repeats count up from it)")] = 1000,
    alpha: Annotated[float, typer.Option(help="Each step's error rate (SPRT)")] = 0.05,
    budget: Annotated[
        float, typer.Option(help="GPU it may use, in full-run equivalents (items run / items)")
    ] = 4.0,
    control: Annotated[int, typer.Option(help="Control items (fine at both ends)")] = 50,
    transcript: TranscriptOpt = False,
    nightly: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="The night its runs are stored under (default: today)"),
    ] = None,
    alert_id: Annotated[int | None, typer.Option(help="Reply in this alert's thread")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Find the first bad commit of a regression: the endpoints choose the items that
    discriminate (their stored nightly runs, else fresh runs), then each midpoint is run on
    those items at repeated seeds until a sequential test decides good or bad. Any family with
    the bisect capability (`benchmarks list`). Exit 1 when it cannot run."""
    from pydantic import ValidationError

    from omni_tasks.benchmarks.request import BenchError
    from omni_tasks.jobs.bisect import BisectParams, run_bisect, summary

    fields: dict[str, object] = {
        "history": history,
        "target": target,
        "benchmark": benchmark,
        "lane": lane or "default",
        "branch": branch,
        "baseline": baseline,
        "variant": variant,
        "dataset": dataset,
        "limit": limit,
        "first_bad": first_bad,
        "seed": seed,
        "alpha": alpha,
        "budget": budget,
        "control": control,
        **run_options({TRANSCRIPT: transcript}),
        "alert_id": alert_id,
    }
    if model:
        fields["server"] = {"model": model}
    try:
        p = BisectParams.model_validate(fields)
    except (ValidationError, ValueError) as exc:
        fail(f"bisect: {exc}", code=2)
    day = parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date()
    conn = open_db()
    with conn:
        try:
            result = run_bisect(conn, p, day)
        except BenchError as exc:
            fail(str(exc))
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
    err.print(f"bisect {p.bisect_id}: {result.evaluations} runs stored", highlight=False)
    console.print(summary(p, result), highlight=False, soft_wrap=True)
