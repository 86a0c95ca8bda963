"""On-demand A/B of two commits, reported as a GitHub check run."""

from __future__ import annotations

from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, json_out, say

VERDICTS = ("regressed", "improved", "unknown", "infra")


@app.command("ab")
def ab_cmd(
    base_target: Annotated[str, typer.Option(help="The base commit's server: URL or simulator:P")],
    head_target: Annotated[str, typer.Option(help="The head commit's server: URL or simulator:P")],
    base_sha: Annotated[str, typer.Option(help="The base commit (full 40-character SHA)")],
    head_sha: Annotated[str, typer.Option(help="The head commit (full SHA): the check's commit")],
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    dataset: opt.DatasetOpt = "demo",
    limit: opt.LimitOpt = None,
    budget: Annotated[
        int, typer.Option(help="Clips the A/B may spend, both sides, all rounds")
    ] = 6000,
    github_repo: Annotated[
        str | None, typer.Option(help="OWNER/NAME: post a check run on the head commit there")
    ] = None,
    pr: Annotated[int | None, typer.Option(help="The pull request number (its A/B id)")] = None,
    details_url: Annotated[
        str | None, typer.Option(help="Where the check run's 'Details' link points")
    ] = None,
    transcript: opt.TranscriptOpt = False,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(help="Exit 3 on these verdicts (regressed, improved, unknown, infra)"),
    ] = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Run base and head on the same series, interleaved, until the paired test decides or
    the budget ends (repeats on the discriminating items while UNKNOWN); print the verdict,
    what it spent and why it stopped, and post it as a GitHub check run with --github-repo.
    Exit codes: 0 decided (whatever the verdict, unless --fail-on), 1 an error, 3 --fail-on."""
    from omni_tasks.ab.checks import CheckRunError
    from omni_tasks.ab.request import ABRequest
    from omni_tasks.jobs.ab import run_ab

    wanted = opt.fail_on_verdicts(fail_on or [], VERDICTS)
    series = opt.series_of(benchmark, model, lane)
    req = opt.validated(
        ABRequest,
        "ab",
        benchmark=series.benchmark,
        base_target=base_target,
        head_target=head_target,
        base_sha=base_sha,
        head_sha=head_sha,
        model=series.model,
        lane=series.lane,
        repo=github_repo,
        pr=pr,
        budget=budget,
        dataset=dataset,
        limit=limit,
        options=opt.run_options({opt.TRANSCRIPT: transcript}),
    )
    policy = opt.load_policy_or_fail()
    result = opt.on_db(
        lambda conn: run_ab(conn, req, policy, say=say, details_url=details_url),
        CheckRunError,
        dispatch=True,  # Slack when configured, else the local outbox
    )
    if as_json:
        json_out(result.to_json())
    else:
        console.print(result.summary, soft_wrap=True)
    opt.exit_on_verdicts(
        "ab", [result.verdict] if result.verdict.lower() in wanted else [], fail_on or []
    )
