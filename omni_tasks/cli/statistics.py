"""Statistics, comparisons, the gate, noise and trends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import TREND_ROWS, app, console, fail, json_out
from omni_tasks.config import get_settings

if TYPE_CHECKING:
    from omni_tasks.analysis.trend import ChangePoint
    from omni_tasks.jobs.decide import SeriesNight


@app.command("stats")
def stats_cmd(
    run_key: opt.RunKeyArg,
    tail_threshold: opt.TailThreshold = None,
    grader: opt.GraderOpt = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Gated statistics of one run (latest grading): tail fraction, capped mean, modes."""
    from omni_tasks.jobs.statistics import compute_stats_for_key
    from omni_tasks.reports.text import print_stats

    policy, tau = opt.policy_and_tau(tail_threshold)
    (run_key,) = opt.run_keys_of(run_key)
    opt.compute_and_show(
        lambda conn: compute_stats_for_key(conn, run_key, tau, policy, grader),
        print_stats,
        as_json,
    )


@app.command("compare")
def compare_cmd(
    baseline: Annotated[
        str, typer.Option(metavar="RUN_KEY", help="Baseline run key (or a unique prefix)")
    ],
    candidate: Annotated[
        str, typer.Option(metavar="RUN_KEY", help="Candidate run key (or a unique prefix)")
    ],
    tail_threshold: opt.TailThreshold = None,
    force: Annotated[
        bool, typer.Option(help="Compare even when fingerprints differ (not INFRA)")
    ] = False,
    baseline_grader: opt.GraderOpt = None,
    candidate_grader: opt.GraderOpt = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Paired per-clip A/B of two runs on the same prompts, with an exact McNemar test.

    Give the same run twice with two graders to compare a re-grade with the original.
    """
    from omni_tasks.jobs.statistics import compare, load_graded_run
    from omni_tasks.reports.text import print_comparison

    policy, tau = opt.policy_and_tau(tail_threshold)
    baseline, candidate = opt.run_keys_of(baseline, candidate)
    if baseline == candidate and baseline_grader == candidate_grader:
        fail(
            f"{baseline} compared with itself: nothing can differ (compare two runs, or one "
            "run's two gradings with --baseline-grader / --candidate-grader)"
        )
    opt.compute_and_show(
        lambda conn: compare(
            conn,
            load_graded_run(conn, baseline, baseline_grader),
            load_graded_run(conn, candidate, candidate_grader),
            tau,
            policy,
            force=force,
        ),
        print_comparison,
        as_json,
    )


@app.command("gate")
def gate_cmd(
    nightly: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Nightly date YYYY-MM-DD (default: the latest stored)"),
    ] = None,
    expect: Annotated[
        list[str] | None,
        typer.Option(help="A branch that must have a run (missing = INFRA); repeatable"),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            metavar="BRANCH", help="Baseline branch (default: OMNI_BASELINE_BRANCH, main)"
        ),
    ] = None,
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            help="For CI: exit 3 when a decision has one of these verdicts, comma-separated "
            "(regressed, infra, unknown, improved, same)"
        ),
    ] = None,
    wide: opt.WideFlag = False,
    as_json: opt.JsonFlag = False,
    whole: Annotated[
        bool,
        typer.Option(
            "--outcome",
            help="With --json: the night's whole outcome (decisions, comparisons, alert "
            "transitions, messages, events) instead of the decisions",
        ),
    ] = False,
) -> None:
    """Gate one nightly: the baseline branch against every other branch and variant, and
    queue the Slack messages its decisions call for (`alerts dispatch` delivers them).

    Exit codes: 0 decided (and nothing matched --fail-on), 1 an error, 2 bad usage,
    3 a decision matched --fail-on."""
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.jobs.decide import decide_series

    wanted = opt.fail_on_verdicts(
        [fail_on or ""], ("regressed", "infra", "unknown", "improved", "same")
    )
    policy = opt.load_policy_or_fail()
    bench = opt.series_of(benchmark, model, lane)

    def decide(conn: Any) -> SeriesNight:
        missing = f"no runs stored for {bench.label}"
        night = opt.night_of(conn, nightly, bench, False, missing, require_runs=not expect)
        baseline_branch = baseline or get_settings().baseline_branch
        question = NightQuestion(bench, night, baseline_branch, tuple(expect or ()))
        return decide_series(conn, question, policy)

    outcome = opt.on_db(decide)
    decisions = outcome.decisions
    if as_json:
        json_out(outcome.outcome.to_json() if whole else [d.to_json() for d in decisions])
    else:
        from omni_tasks.reports.text import print_gate

        print_gate(console, outcome.outcome.nightly, decisions, wide)
        if outcome.messages_enqueued:
            console.print(
                f"{outcome.messages_enqueued} alert message(s) queued: `omni-tasks alerts dispatch`"
            )
    matched = [
        f"{d.candidate_branch} {d.verdict}" for d in decisions if d.verdict.lower() in wanted
    ]
    opt.exit_on_verdicts("gate", matched, [fail_on or ""])


@app.command("noise")
def noise_cmd(
    run_keys: Annotated[list[str], typer.Argument(help="Runs of ONE commit, different seeds")],
    tail_threshold: opt.TailThreshold = None,
    comparisons: Annotated[int, typer.Option(help="Comparisons a night (m)")] = 1,
    as_json: opt.JsonFlag = False,
) -> None:
    """A/A noise calibration: discordant rate psi and the detectable Δ tail (MDE)."""
    from omni_tasks.analysis.noise import calibrate
    from omni_tasks.jobs.statistics import load_graded_run
    from omni_tasks.store.runs import RunNotFoundError

    policy, tau = opt.policy_and_tau(tail_threshold)
    runs = opt.on_db(
        lambda conn: [load_graded_run(conn, k).clips for k in run_keys], RunNotFoundError
    )
    with opt.fails_on(ValueError):
        cal = calibrate(runs, tau, policy.alpha, comparisons)
    if as_json:
        json_out(cal)
        return
    console.print(
        f"{cal.n_runs} runs x {cal.n_clips} clips at tau {cal.tau}: discordant rate "
        f"psi = {cal.psi:.4f}; MDE = {cal.mde:.4f} (80 % power, one-sided alpha "
        f"{policy.alpha}, m = {comparisons})",
    )
    if cal.dispersion is None:
        console.print("over-dispersion across seeds: needs three runs or more")
    elif cal.overdispersed:
        console.print(
            f"the runs vary more than their clips explain: dispersion {cal.dispersion:.2f} "
            f"(p {cal.dispersion_p:.2g}), a run-level effect. A run-group night takes seeds as "
            "independent and overstates its evidence here: it never confirms alone, and "
            "its p is not comparable to a paired night's",
        )
    else:
        console.print(
            f"the runs vary as their clips explain: dispersion {cal.dispersion:.2f} "
            f"(p {cal.dispersion_p:.2g})",
        )


@app.command("trend")
def trend_cmd(
    branch: Annotated[
        str, typer.Option(metavar="BRANCH", help="Branch whose nightly series to read")
    ],
    variant: opt.VariantOpt = "default",
    metric: Annotated[
        str,
        typer.Option(
            help="tail_fraction, capped_mean_wer, official_mean (the harness's figure; "
            "summary-only imports included, marked) or paired_delta (the gate's nightly "
            "paired Δ tail against --baseline)"
        ),
    ] = "tail_fraction",
    baseline: Annotated[
        str, typer.Option(metavar="BRANCH", help="The baseline branch of --metric paired_delta")
    ] = "main",
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Change points on a branch's nightly series (descriptive; not used by the gate).
    Reads statistics stored by `stats`, `compare` and `gate`."""
    from omni_tasks.jobs.statistics import trend

    policy = opt.load_policy_or_fail()
    chosen = opt.series_of(benchmark, model, lane)

    def read(conn: Any) -> tuple[list[dict[str, Any]], list[ChangePoint]]:
        # A series with no runs at all is an error naming those that have runs.
        opt.night_of(conn, None, chosen, False, f"no runs stored for {chosen.label}")
        return trend(
            conn,
            series=chosen,
            branch=branch,
            variant=variant,
            metric=metric,
            policy=policy,
            baseline=baseline,
        )

    series, points = opt.on_db(read, ValueError)
    if as_json:
        json_out({"series": series, "change_points": points})
        return
    summary_only = sum(bool(r.get("summary_only")) for r in series)
    at = "" if metric == "official_mean" else f" at tau {policy.primary_tau}"
    marked = f" ({summary_only} summary-only, marked *)" if summary_only else ""
    console.print(f"{branch}/{variant}: {len(series)} nights of {metric}{at}{marked}")
    for r in series[-TREND_ROWS:]:
        star = " *" if r.get("summary_only") else ""
        console.print(f"  {r['nightly']}  {r[metric]:.4f}{star}")
    if not points:
        console.print("no change point (minimum segment 3 nights)")
    for p in points:
        why = " (known break: an event)" if p.known_break else ""
        console.print(f"  from {p.nightly}: {p.before:.4f} -> {p.after:.4f}{why}")
