"""Bisection of a regression between two commits, from the command line (the bisect DAG's
form runs the same job)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, fail, json_out, say

if TYPE_CHECKING:
    from omni_tasks.jobs.bisect import BisectParams


@app.command("bisect")
def bisect_cmd(
    history: Annotated[
        list[str],
        typer.Argument(
            help="Commits, oldest (good) to newest (bad), at least two; two endpoints in the "
            "configured repository bisect every commit between them"
        ),
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
    dataset: opt.SeriesDatasetOpt = None,
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
    from omni_tasks.jobs.bisect import run_bisect, summary

    p = opt.validated(
        _configured,
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
    p = _filled_in(p)
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


def _configured(**given: Any) -> BisectParams:
    """The params of the command's fields over the serving of the configured series they name
    (its repo, environment, server and grader; OMNI_NIGHTLY_CONFIG), as the bisect DAG's form
    is: a `vllm-serve` bisect from an alert's Next line serves each commit the nightly's way."""
    from omni_tasks.deployment.one_series import config_defaults, series_config, with_serving
    from omni_tasks.jobs.bisect import BisectParams

    fields = {k: v for k, v in given.items() if v is not None}  # the model's defaults
    server = fields.get("server") or {}
    config = series_config(None, fields.get("benchmark"), fields.get("lane"), server.get("model"))
    return BisectParams.model_validate(
        {**config_defaults("bisect", fields, config), **with_serving(fields, config)}
    )


def _filled_in(p: BisectParams) -> BisectParams:
    """Two endpoints (what an alert's Next line gives) are the commits between them, oldest
    first, read from the configured repository; without one, the two are bisected as given."""
    from omni_tasks.jobs.auto_bisect import commit_range

    repo = p.commit_repo
    if len(p.history) != 2 or p.axis != "vllm-omni" or repo is None:
        return p
    good, bad = p.history
    try:
        commits = commit_range(repo, good, bad)
    except RuntimeError as exc:  # git's own words: not a repository, an unknown commit
        fail(f"bisect: {exc}")
    if commits is None:
        fail(f"{good[:12]} is not an ancestor of {bad[:12]} in {repo}: give the commits")
    if len(commits) > 2:
        say(f"bisecting the {len(commits) - 2} commits between {good[:12]} and {bad[:12]}")
    return p.model_copy(update={"history": commits})
