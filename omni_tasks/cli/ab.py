"""On-demand A/B of two commits, reported as a GitHub check run."""

from __future__ import annotations

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
    load_policy_or_fail,
    open_db,
    run_options,
)

VERDICTS = ("regressed", "improved", "unknown", "infra")


@app.command("ab")
def ab_cmd(
    base_target: Annotated[str, typer.Option(help="The base commit's server: URL or simulator:P")],
    head_target: Annotated[str, typer.Option(help="The head commit's server: URL or simulator:P")],
    base_sha: Annotated[str, typer.Option(help="The base commit (full 40-character SHA)")],
    head_sha: Annotated[str, typer.Option(help="The head commit (full SHA): the check's commit")],
    benchmark: BenchmarkOpt = None,
    model: ServedModelOpt = None,
    lane: LaneOpt = None,
    dataset: Annotated[
        str, typer.Option(metavar="DIR", help="demo or the benchmark's dataset root")
    ] = "demo",
    limit: Annotated[int | None, typer.Option(help="Only the first N items")] = None,
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
    transcript: TranscriptOpt = False,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(help="Exit 3 on these verdicts (regressed, improved, unknown, infra)"),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run base and head on the same series, interleaved, until the paired test decides or
    the budget ends (repeats on the discriminating items while UNKNOWN); print the verdict,
    what it spent and why it stopped, and post it as a GitHub check run with --github-repo.
    Exit codes: 0 decided (whatever the verdict, unless --fail-on), 1 an error, 3 --fail-on."""
    from omni_tasks.ab.checks import CheckRunError
    from omni_tasks.ab.request import ABError, ABRequest
    from omni_tasks.config import get_settings
    from omni_tasks.jobs.ab import run_ab
    from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL

    wanted = [v.lower() for v in fail_on or []]
    if bad := [v for v in wanted if v not in VERDICTS]:
        fail(f"--fail-on: {', '.join(bad)} (choose from {', '.join(VERDICTS)})", code=2)
    try:
        req = ABRequest(
            benchmark=benchmark or get_settings().benchmark,
            base_target=base_target,
            head_target=head_target,
            base_sha=base_sha,
            head_sha=head_sha,
            model=model or DEFAULT_MODEL,
            lane=lane or DEFAULT_LANE,
            repo=github_repo,
            pr=pr,
            budget=budget,
            dataset=dataset,
            limit=limit,
            options=run_options({TRANSCRIPT: transcript}),
        )
    except ABError as exc:
        fail(str(exc), code=2)
    policy = load_policy_or_fail()
    conn = open_db()
    with conn:
        try:
            result = run_ab(
                conn,
                req,
                policy,
                say=lambda line: err.print(line, highlight=False),
                details_url=details_url,
            )
        except CheckRunError as exc:
            fail(str(exc))
        import contextlib
        import sys

        from omni_tasks.alerts.slack import default_sink, dispatch

        with contextlib.redirect_stdout(sys.stderr):  # the local outbox prints what it keeps
            dispatch(conn, default_sink())  # Slack when configured, else the local outbox
    if as_json:
        json_out(result.to_json())
    else:
        console.print(result.summary, highlight=False, soft_wrap=True)
    if result.verdict.lower() in wanted:
        err.print(f"ab: {result.verdict} (--fail-on {', '.join(wanted)})", highlight=False)
        raise typer.Exit(3)
