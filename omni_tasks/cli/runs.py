"""Inspect and delete stored runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, fail, json_out, parse_date, runs_app
from omni_tasks.reports.tables import print_table


@runs_app.command("list")
def runs_list(
    benchmark: opt.OnlyBenchmark = None,
    model: opt.OnlyModel = None,
    lane: opt.OnlyLane = None,
    branch: opt.OnlyBranch = None,
    nightly: Annotated[
        str | None, typer.Option(metavar="DATE", help="Only this nightly date")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many runs")] = 200,
    wide: opt.WideFlag = False,
    as_json: opt.JsonFlag = False,
) -> None:
    """List stored runs, newest nightly first, with their series (benchmark, model, lane)."""
    from omni_tasks.store.runs import list_runs

    rows = opt.on_db(
        lambda conn: list_runs(
            conn,
            benchmark=benchmark,
            model=model,
            lane=lane,
            branch=branch,
            nightly=parse_date(nightly) if nightly else None,
            limit=limit,
        )
    )
    if as_json:
        json_out(rows)
        return
    # Keys are what commands take: never cut, so they can be copied (any unique prefix works);
    # nightly, branch, commit and variant are inside the key, so they go first when narrow.
    columns: dict[str, Callable[[dict[str, Any]], str]] = {
        "run key": lambda r: r["run_key"],
        "nightly": lambda r: str(r["nightly"]),
        "benchmark": lambda r: r["benchmark"],
        "model": lambda r: r["model"].rsplit("/", 1)[-1],
        "lane": lambda r: r["lane"],
        "branch": lambda r: r["branch"],
        "commit": lambda r: (r["commit_sha"] or "?")[:12],
        "variant": lambda r: r["variant"],
        "status": lambda r: r["status"],
        "clips": lambda r: f"{r['n_clips']}/{r['n_expected']}",
        "gradings": lambda r: str(r["n_gradings"]),
    }
    print_table(
        console,
        list(columns),
        [[cell(r) for cell in columns.values()] for r in rows],
        keep="run key",
        drop_first=[
            "gradings",
            "variant",
            "commit",
            "nightly",
            "model",
            "benchmark",
            "lane",
            "branch",
            "clips",
            "status",
        ],
        wide=wide,
    )


@runs_app.command("delete")
def runs_delete(
    run_key: opt.RunKeyArg,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete (there is no undo)")] = False,
) -> None:
    """Delete a run: its clips, gradings, statistics, comparisons and stored audio. Gate
    decisions that used it keep their verdicts (their link to the run is cleared)."""
    from omni_tasks.store.runs import RunNotFoundError, delete_run, describe_run

    (key,) = opt.run_keys_of(run_key)

    def delete(conn: Any) -> str:
        info = describe_run(conn, key)
        what = f"{key} ({info.branch}, {info.nightly}, {info.n_clips} clips)"
        if not yes:
            fail(f"would delete {what}; pass --yes to delete it")
        delete_run(conn, key)
        return what

    what = opt.on_db(delete, RunNotFoundError)
    console.print(f"deleted {what}")


@runs_app.command("show")
def runs_show(run_key: opt.RunKeyArg, as_json: opt.JsonFlag = False) -> None:
    """Show one run: provenance, clips by status, gradings, and the command that
    reproduces it."""
    import dataclasses

    from omni_tasks.benchmarks.reproduce import reproduce_described
    from omni_tasks.store.runs import RunNotFoundError, describe_run

    (run_key,) = opt.run_keys_of(run_key)
    described = opt.on_db(lambda conn: describe_run(conn, run_key), RunNotFoundError)
    info = {**dataclasses.asdict(described), "reproduce": reproduce_described(described)}
    if as_json:
        json_out(info)
        return

    def show(label: str, value: object, soft_wrap: bool = False) -> None:
        console.print(f"[bold]{label:>10}[/]: {value}", soft_wrap=soft_wrap)

    for k in (
        "run_key",
        "benchmark",
        "model",
        "lane",
        "nightly",
        "branch",
        "commit",
        "variant",
        "seed",
        "trigger",
        "status",
    ):
        show(k, info[k])
    show("clips", f"{info['n_clips']} of {info['n_expected']} {info['clips_by_status']}")
    for g in info["gradings"]:
        show("grading", f"#{g['grading_id']} {g['grader_id']} ({g['n_grades']} grades)")
    show("reproduce", info["reproduce"], soft_wrap=True)
