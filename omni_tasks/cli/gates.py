"""Upstream's fixed gates: how often they fail with nothing changed, and what to set instead."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, fail, group, json_out

if TYPE_CHECKING:
    from omni_tasks.gates.advice import GateAdvice
    from omni_tasks.gates.references import Reference
    from omni_tasks.gates.table import UpstreamGate
    from omni_tasks.series import Series

gates_app = group("gates", "Upstream's fixed accuracy gates, judged from history.")
T = TypeVar("T")


@gates_app.command("advise")
def advise_cmd(
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    series: Annotated[
        str | None,
        typer.Option(help="The series as BENCHMARK|MODEL|LANE (instead of the three options)"),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option(metavar="BRANCH", help="Branch whose nights to read (default: the baseline)"),
    ] = None,
    commit: Annotated[
        str | None,
        typer.Option(
            metavar="SHA", help="Use the nights of this commit (default: the one with most nights)"
        ),
    ] = None,
    figure: Annotated[
        str | None,
        typer.Option(help="The gated figure, when the series has several (e.g. seed_tts_sim_mean)"),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(help="Judge this threshold instead of upstream's (required when none known)"),
    ] = None,
    target_false_fail: Annotated[
        float, typer.Option(help="False-fail rate the suggested threshold aims at (per night)")
    ] = 0.02,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            exists=True,
            dir_okay=False,
            help="Deployment config whose series' `upstream_gate` replaces the gate table's",
        ),
    ] = None,
    sku: Annotated[
        str | None,
        typer.Option(
            help="Hardware the nights ran on (e.g. H100): judge the reference registered for it "
            "and --protocol, or print one from this history to register"
        ),
    ] = None,
    protocol: Annotated[
        str, typer.Option(help="Serving protocol of the nights: chat, realtime, reference-as-input")
    ] = "chat",
    markdown: Annotated[
        bool, typer.Option("--markdown", help="A ready-to-paste PR description")
    ] = False,
    as_json: opt.JsonFlag = False,
) -> None:
    """For the series' upstream gate (figure, comparator, threshold from the gate table, or
    --threshold): its chance of failing a night with nothing changed, the shift it catches,
    its record, and the threshold that would fail 1 night in 50 (--target-false-fail).
    With --sku, beside it the accuracy reference registered for (suite, model, SKU, protocol)
    in the references file (OMNI_GATE_REFERENCES), or the entry this history would register."""
    from omni_tasks import benchmarks
    from omni_tasks.config import get_settings
    from omni_tasks.gates.text import lines, pr_description
    from omni_tasks.jobs.gate_advice import NoHistory, advise_series

    if not 0 < target_false_fail < 0.5:
        fail("--target-false-fail must be between 0 and 0.5", code=2)
    chosen = opt.series_of(benchmark, model, lane, named=series)
    with opt.fails_on(benchmarks.UnknownBenchmark, code=2):
        judged = benchmarks.get(chosen.benchmark).judged
    gates = _gates(chosen, config, figure, threshold)
    registered = _registered(chosen, sku, protocol, [g.figure for g in gates])
    policy = opt.load_policy_or_fail()
    advice = opt.on_db(
        lambda conn: [
            advise_series(
                conn,
                chosen,
                branch or get_settings().baseline_branch,
                g,
                policy,
                target=target_false_fail,
                commit=commit,
                reference=registered.get(g.figure),
            )
            for g in gates
        ],
        NoHistory,
    )
    what = "broken items" if judged == "wer" else "wrong answers"
    if as_json:
        json_out(advice)
    elif markdown:
        for g, a in zip(gates, advice, strict=True):
            print(pr_description(a, chosen.label, g.constant, what))
    else:
        for a in advice:
            for line in lines(a, what):
                console.print(line, soft_wrap=True)
            _print_entry(chosen, sku, protocol, a)


def _gates(
    chosen: Series, config: Path | None, figure: str | None, threshold: float | None
) -> list[UpstreamGate]:
    """The series' upstream gates to judge: the deployment config's (--config) or the gate
    table's, on --figure, at --threshold; the benchmark's own figure when none is known and
    --threshold is given."""
    from omni_tasks.gates.table import gates_of
    from omni_tasks.jobs.gate_advice import default_gate

    configured = None
    if config is not None:
        from omni_tasks.deployment.night import resolve_night
        from omni_tasks.deployment.reading import ConfigError

        with opt.fails_on(ConfigError, what="deployment config"):
            night = resolve_night({}, str(config.resolve()))
        mine = [p for p in night.series if p.series == chosen]
        if not mine:
            fail(f"{config}: no series {chosen.label}", code=2)
        configured = mine[0].upstream_gates()
    gates = [g for g in gates_of(chosen, configured) if figure is None or g.figure == figure]
    if not gates:
        fallback = default_gate(chosen)
        if threshold is None or fallback is None or (figure and figure != fallback.figure):
            fail(
                f"no upstream gate known for {chosen.label}"
                + (f" on {figure}" if figure else "")
                + ": pass --threshold (and --figure)",
                code=2,
            )
        gates = [fallback]
    return gates if threshold is None else [g.with_threshold(threshold) for g in gates]


def _registered(
    series: Series, sku: str | None, protocol: str, figures: list[str]
) -> dict[str, Reference]:
    """The reference registered for the series on (sku, protocol), by the figure it gates."""
    from omni_tasks.config import get_settings
    from omni_tasks.gates.references import TABLE, NotRegistered, ReferenceError, reference_for
    from omni_tasks.series import PROTOCOLS

    if protocol not in PROTOCOLS:
        fail(f"--protocol {protocol!r}: one of {', '.join(PROTOCOLS)}", code=2)
    if sku is None:
        return {}
    path = get_settings().gate_references or TABLE
    try:
        ref = reference_for(series.benchmark, series.model, sku, protocol, path)
    except NotRegistered:
        return {}
    except ReferenceError as exc:
        fail(str(exc))
    return {ref.figure: ref} if ref.figure in figures else {}


def _print_entry(series: Series, sku: str | None, protocol: str, a: GateAdvice) -> None:
    """With --sku and no reference registered for it, the entry this history would register."""
    import datetime as dt

    from omni_tasks.gates.references import entry_yaml

    if sku is None or a.reference is not None or a.design is None:
        return
    console.print(
        f"  no reference registered for {series.benchmark} · {series.model} on {sku} over "
        f"{protocol}; this history's, to merge under `suites:` in the references file:",
        soft_wrap=True,
    )
    source = f"{a.basis} (omni-tasks gates advise, {dt.date.today():%Y-%m-%d})"
    text = entry_yaml(
        series.benchmark,
        series.model,
        sku,
        protocol,
        a.figure,
        a.comparator == ">=",
        a.median_figure,
        a.design,
        source,
    )
    print(text, end="")


@gates_app.command("mean")
def mean_cmd(
    sigma: Annotated[float, typer.Option(help="One item's standard deviation of the figure")],
    n: Annotated[int, typer.Option(help="Items a night")],
    alpha: Annotated[float, typer.Option(help="False-fail chance a night (α)")] = 0.05,
    beta: Annotated[float, typer.Option(help="Chance to miss an effect of θ (β)")] = 0.2,
    reference: Annotated[
        float | None, typer.Option(help="The figure's reference (e.g. a healthy mean)")
    ] = None,
    direction: Annotated[
        str, typer.Option(help="Which way: >= (must stay above: accuracy) or <= (below: WER)")
    ] = ">=",
    as_json: opt.JsonFlag = False,
) -> None:
    """A mean gate as a hypothesis test (TensorRT-LLM's form): α, β, σ and n give the minimum
    detectable effect θ and, with a reference, the threshold."""
    from omni_tasks.gates.design import mean_gate

    if direction not in (">=", "<="):
        fail("--direction: >= or <=", code=2)
    g = _design(lambda: mean_gate(alpha, beta, sigma, n, reference, direction), as_json)  # type: ignore[arg-type]
    if g is None:
        return
    line = f"n {n}, σ {sigma:g}: θ = {g.theta:.4g} detectable at α {alpha:g}, power {1 - beta:g}"
    if g.threshold is not None:
        line += f"; threshold {direction} {g.threshold:.4g} (reference {reference:g})"
    console.print(line)


@gates_app.command("k-of-n")
def k_of_n_cmd(
    healthy: Annotated[float, typer.Option(help="Pass rate of a healthy build (per item)")],
    n: Annotated[int | None, typer.Option(help="Items run (omit: the n the goals need)")] = None,
    k: Annotated[
        int | None, typer.Option(help="Passes required (omit: the most tolerant k within α)")
    ] = None,
    degraded: Annotated[
        float | None, typer.Option(help="A degraded pass rate the gate must catch")
    ] = None,
    alpha: Annotated[float, typer.Option(help="False-fail chance allowed (α)")] = 0.01,
    beta: Annotated[float, typer.Option(help="Miss chance allowed at --degraded (β)")] = 0.2,
    as_json: opt.JsonFlag = False,
) -> None:
    """A "≥ k of n" gate (upstream's form for flaky per-request checks: no retries, no early
    exit): its false-fail chance and its power, or the smallest n (and k) that meets α and β."""
    from omni_tasks.gates.design import k_for, k_of_n, n_for_k_of_n

    if n is None and degraded is None:
        fail("--degraded is needed to find n", code=2)
    g = _design(
        lambda: (
            n_for_k_of_n(healthy, degraded, alpha, beta)  # type: ignore[arg-type]  # given
            if n is None
            else k_of_n(n, k if k is not None else k_for(n, healthy, alpha), healthy, degraded)
        ),
        as_json,
    )
    if g is None:
        return
    line = f">= {g.k} of {g.n}: fails a healthy build ({healthy:g}) {g.false_fail:.2%} of the time"
    if g.power is not None:
        line += f"; catches a pass rate of {degraded:g} {g.power:.1%} of the time"
    console.print(line)


@gates_app.command("zero")
def zero_cmd(
    rate: Annotated[list[float], typer.Option(help="Leak rate(s) to catch (per item)")],
    n: Annotated[int | None, typer.Option(help="Items checked (omit: the n for --power)")] = None,
    power: Annotated[float, typer.Option(help="Power wanted when n is omitted")] = 0.9,
    as_json: opt.JsonFlag = False,
) -> None:
    """A zero-tolerance gate ("0 wrong of n", upstream's voice-isolation test): its chance to
    see a leak at each rate, or the n it needs for --power."""
    from omni_tasks.gates.design import n_for_zero_tolerance, zero_tolerance

    rows = _design(
        lambda: [
            zero_tolerance(n if n is not None else n_for_zero_tolerance(r, power), r) for r in rate
        ],
        as_json,
    )
    for z in rows or ():
        console.print(f"0 wrong of {z.n}: catches a {z.rate:.1%} leak {z.power:.1%} of the time")


def _design(design: Callable[[], T], as_json: bool) -> T | None:
    """A gate's design from the options (a value it refuses is bad usage, exit 2); with
    --json printed, and None (nothing more to print)."""
    with opt.fails_on(ValueError, code=2):
        made = design()
    if not as_json:
        return made
    json_out(made)
    return None
