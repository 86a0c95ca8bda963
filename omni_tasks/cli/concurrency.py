"""Concurrency invariance, from the command line: the same items alone and co-batched."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, fail, json_out, say

if TYPE_CHECKING:
    from omni_tasks.analysis.concurrency import ConcurrencyResult


@app.command("concurrency")
def concurrency_cmd(
    target: opt.TargetOpt,
    levels: Annotated[
        str, typer.Option(help="Concurrency levels, 1 first: each is paired with it")
    ] = "1,8",
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    branch: Annotated[
        str, typer.Option(metavar="BRANCH", help="The branch the target serves")
    ] = "main",
    commit: opt.CommitOpt = None,
    seed: Annotated[int, typer.Option(help="The seed every level sends")] = 42,
    dataset: opt.DatasetOpt = "demo",
    limit: opt.LimitOpt = None,
    control: Annotated[
        bool, typer.Option(help="Also rerun c = 1: is the server deterministic at all?")
    ] = False,
    voices: Annotated[
        int,
        typer.Option(
            help="seed-TTS audio runs: mix this many reference voices round-robin and label each "
            "output's voice (a proxy embedder)"
        ),
    ] = 1,
    transcript: opt.TranscriptOpt = False,
    nightly: opt.NightlyOpt = None,
    show: Annotated[int, typer.Option(help="Changed items shown, both sides of each")] = 10,
    as_json: opt.JsonFlag = False,
) -> None:
    """Does an answer depend on who else is in the batch? Send the same items, seeds and order
    at each level (one run per level, trigger `concurrency`), pair each item with itself sent
    alone, and say BATCH-VARIANT (outputs that changed, content regressed by exact McNemar) or
    SAME (with the bound on the change rate it rules out). Any family with the concurrency
    capability (`benchmarks list`). Exit 1 when it cannot run."""
    from omni_tasks.benchmarks.request import BenchError
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.concurrency import ConcurrencyRequest, run_concurrency
    from omni_tasks.reports.concurrency import write_report

    series = opt.series_of(benchmark, model, lane)
    try:
        asked = tuple(int(x) for x in levels.split(","))
    except ValueError:
        fail(f"--levels: {levels!r} is not a comma-separated list of integers", code=2)
    req = opt.validated(
        ConcurrencyRequest,
        "concurrency",
        benchmark=series.benchmark,
        target=target,
        levels=asked,
        branch=branch,
        commit=commit,
        seed=seed,
        dataset=dataset,
        limit=limit,
        options=opt.run_options(
            {opt.TRANSCRIPT: transcript, "voices": voices if voices > 1 else None}
        ),
        model=series.model,
        lane=series.lane,
        control=control,
        nightly=opt.night_or_today(nightly),
    )
    result = opt.on_db(lambda conn: run_concurrency(conn, req, load_policy(), say=say), BenchError)
    page = write_report(
        result, f"Concurrency: {series.label} on {target}", target.startswith("simulator:")
    )
    if as_json:
        json_out(result.to_json() | {"report": str(page)})
        return
    console.print(f"{series.label}: {result.verdict}")
    _print_changes(result, show)
    console.print("runs: " + ", ".join(f"{k} {v}" for k, v in result.runs.items()), soft_wrap=True)
    console.print(f"report: {page}", soft_wrap=True)


def _print_changes(result: ConcurrencyResult, show: int) -> None:
    """Each level's comparison, with up to `show` changed items and voice leaks."""
    for c in result.comparisons:
        console.print(c.summary, soft_wrap=True)
        for item in c.flipped[:show]:
            console.print(
                f"  {item.item}: alone {item.alone!r}"
                + (" (broken)" if item.alone_broken else "")
                + f" → batched {item.batched!r}"
                + (" (broken)" if item.batched_broken else ""),
                soft_wrap=True,
            )
        for leak in c.voice.leaks[:show] if c.voice else ():
            console.print(
                f"  {leak.item}: sounds like {leak.heard_as} co-batched (margin "
                f"{leak.margin:+.2f}, alone {leak.alone_margin:+.2f}): {leak.alone_audio} → "
                f"{leak.batched_audio}",
                soft_wrap=True,
            )
