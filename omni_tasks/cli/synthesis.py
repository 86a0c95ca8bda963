"""Synthesize a benchmark run; the local simulator."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer

from omni_tasks.cli.common import (
    BackendOpt,
    BatchOpt,
    DeviceOpt,
    HarnessOpt,
    JsonFlag,
    ModelOpt,
    PrecisionOpt,
    WideFlag,
    WindowOpt,
    app,
    console,
    err,
    fail,
    json_out,
    load_grader_or_fail,
    open_db,
    parse_date,
    simulator_app,
)


# ---------------------------------------------------------------- synthesis
def _run_family(benchmark: str, req_fields: dict[str, Any]) -> None:
    """A benchmark other than seed-TTS, run as the nightly runs it: the family's own runner."""
    from omni_tasks import benchmarks
    from omni_tasks.benchmarks.request import BenchError, RunRequest

    try:
        family = benchmarks.get(benchmark)
    except benchmarks.UnknownBenchmark as exc:
        fail(str(exc), code=2)
    if not family.runnable:
        fail(f"--benchmark {benchmark} cannot run here: it arrives by `omni-tasks import`", code=2)
    problem = family.check_dataset(str(req_fields["dataset"]))
    if problem:
        fail(f"--dataset: {problem}", code=2)
    try:
        req = RunRequest(benchmark=benchmark, **req_fields)
    except BenchError as exc:
        fail(str(exc))
    conn = open_db()
    with conn:
        try:
            key = family.run(conn, req, {}, show_progress=True)  # they judge by their rule
        except ValueError as exc:  # a malformed set, a profile, another run under the key
            fail(str(exc))
    print(key)


@app.command("bench")
def bench_cmd(
    target: Annotated[
        str, typer.Option(help="http(s)://HOST:PORT of a serving vLLM-Omni, or simulator:PROFILE")
    ],
    branch: Annotated[
        str, typer.Option(metavar="BRANCH", help="Branch the target runs (e.g. main, rebase)")
    ],
    benchmark: Annotated[
        str,
        typer.Option(
            metavar="BENCHMARK",
            help="seed_tts (speech, graded by ASR; the locale follows the dataset), or any "
            "runnable benchmark (`omni-tasks benchmarks`): daily_omni, videomme (multiple "
            "choice, asked as upstream's bench asks, read by its rule), librispeech (ASR)",
        ),
    ] = "seed_tts",
    dataset: Annotated[
        str,
        typer.Option(
            metavar="DIR",
            help="demo (the benchmark's shipped set), or a root in upstream's layout: a "
            "seed-tts-eval locale dir, a Daily-Omni root (qa.json, Videos/), a Video-MME root "
            "(videomme/test-00000-of-00001.parquet, video/)",
        ),
    ] = "demo",
    commit: Annotated[
        str | None, typer.Option(metavar="SHA", help="Commit SHA the target runs")
    ] = None,
    seed: Annotated[int, typer.Option(help="Run seed, sent to every stage")] = 42,
    limit: Annotated[int | None, typer.Option(help="Only the first N utterances")] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (default derived)")] = None,
    prompt_template: Annotated[
        str, typer.Option(help="seed-tts-default (the harness's) or read-aloud")
    ] = "seed-tts-default",
    transcript_mode: Annotated[
        bool, typer.Option(help="Simulator only: return what would be heard, no audio (fast)")
    ] = False,
    nightly: Annotated[
        str | None, typer.Option(metavar="DATE", help="Nightly date (default today, UTC)")
    ] = None,
    variant: Annotated[str, typer.Option(help="Variant name (config overrides)")] = "default",
    concurrency: Annotated[int, typer.Option(help="Requests in flight")] = 10,
    deploy_config: Annotated[
        Path | None,
        typer.Option(
            help="The target's vLLM-Omni deploy yaml: its per-stage defaults let the run seed "
            "reach every stage (without it, an http(s) target gets no seed)"
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Per-request deadline, seconds (default: the --harness-version client's, else 900)"
        ),
    ] = None,
    audio_cap: Annotated[
        float,
        typer.Option(
            help="Stop reading after this much audio (s); a run on a harness version reads up "
            "to --timeout, as the harness does"
        ),
    ] = 60.0,
    backend: BackendOpt = "faster-whisper",
    model: ModelOpt = None,
    precision: PrecisionOpt = None,
    window: WindowOpt = None,
    harness_version: HarnessOpt = None,
    batch_size: BatchOpt = 8,
    device: DeviceOpt = "cpu",
    as_json: JsonFlag = False,
) -> None:
    """Synthesize a dataset against a target, store every clip, grade it; print the run key.
    Another --benchmark runs through its family's runner: every item asked and judged."""
    if benchmark != "seed_tts":
        fields = {
            "target": target,
            "branch": branch,
            "dataset": dataset,
            "commit": commit,
            "seed": seed,
            "limit": limit,
            "run_key": run_key,
            "variant": variant,
            "concurrency": concurrency,
            "timeout_s": timeout,
            "harness_version": harness_version,
            "nightly": parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date(),
        }
        _run_family(benchmark, fields)
        return
    from omni_tasks.benchmarks.seed_tts.run import BenchError, BenchRequest, run_benchmark
    from omni_tasks.dataset import DatasetError
    from omni_tasks.synthesis.profiles import ProfileError
    from omni_tasks.synthesis.stages import DeployConfigError, StageDefaults

    try:
        stages = StageDefaults.load(deploy_config) if deploy_config else None
    except DeployConfigError as exc:
        fail(str(exc))
    try:
        req = BenchRequest(
            target=target,
            branch=branch,
            dataset=dataset,
            commit=commit,
            seed=seed,
            limit=limit,
            run_key=run_key,
            prompt_template=prompt_template,
            transcript_mode=transcript_mode,
            nightly=parse_date(nightly) if nightly else dt.datetime.now(dt.UTC).date(),
            variant=variant,
            concurrency=concurrency,
            timeout_s=timeout,
            audio_cap_s=audio_cap,
            stage_defaults=stages,
            harness_version=harness_version,
        )
    except BenchError as exc:
        fail(str(exc))
    if req.stages is None and seed is not None:
        err.print(
            f"[yellow]warning:[/] {target}: stage defaults unknown (pass --deploy-config), so "
            f"the run seed {seed} is not sent: each stage samples with the server's own settings",
            highlight=False,
        )
    grader = None
    if not transcript_mode:
        grader = load_grader_or_fail(
            backend, model, precision, window, 1, batch_size, device, harness_version
        )
    conn = open_db()
    with conn:
        try:
            outcome = run_benchmark(conn, req, grader, show_progress=not as_json)
        except (BenchError, DatasetError, ProfileError, ValueError) as exc:
            fail(str(exc))
    if as_json:
        json_out(dataclasses.asdict(outcome))
    else:
        if not outcome.synthesized:
            console.print("[dim]already stored: not synthesized again[/]")
        console.print(outcome.summary(), soft_wrap=True)
        print(outcome.run_key)
    if outcome.run_status == "failed":  # stored (nothing is lost), but not a result: exit 1
        fail(f"run {outcome.run_key} failed: {outcome.failure}")


@simulator_app.command("serve")
def simulator_serve(
    profile: Annotated[str, typer.Option(help="main, rebase or clean (profiles.yaml)")] = "main",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free one)")] = 8091,
    transcript_mode: Annotated[
        bool, typer.Option(help="Return what would be heard instead of audio")
    ] = False,
) -> None:
    """Serve the simulator in the foreground on loopback (Ctrl-C stops it). It answers seed-TTS
    requests, and every registered family's items as the family says (`benchmarks list`)."""
    from omni_tasks import benchmarks
    from omni_tasks.synthesis.profiles import ProfileError, load_profile
    from omni_tasks.synthesis.simulator import SimulatorConfig, serve_forever

    try:
        load_profile(profile)
    except ProfileError as exc:
        fail(str(exc))
    config = SimulatorConfig(profile, transcript_mode, answerers=benchmarks.answerers())
    serve_forever(config, port)


@simulator_app.command("profiles")
def simulator_profiles(wide: WideFlag = False) -> None:
    """List the simulator's failure profiles and their per-clip rates."""
    from omni_tasks.reports.tables import print_table
    from omni_tasks.synthesis.profiles import EVENTS, load_profile, profile_names

    rows = []
    for name in profile_names():
        p = load_profile(name)
        for label, hard, question in (
            ("easy", False, False),
            ("question", False, True),
            ("hard", True, False),
        ):
            rates = p.rates(hard, question)
            rows.append([name, label, *(f"{rates.get(e, 0.0):.3f}" for e in EVENTS)])
    print_table(
        console,
        ["profile", "clips", *EVENTS],
        rows,
        keep="profile",
        drop_first=list(reversed(EVENTS)),
        wide=wide,
    )
