"""Synthesize a benchmark run; the local simulator."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from omni_tasks.cli.common import (
    BackendOpt,
    BatchOpt,
    DeviceOpt,
    HarnessOpt,
    JsonFlag,
    ModelOpt,
    PrecisionOpt,
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
def _ask_choices(
    target: str,
    branch: str,
    dataset: str,
    commit: str | None,
    seed: int,
    limit: int | None,
    nightly: str | None,
    concurrency: int,
    timeout: float,
) -> None:
    from omni_tasks.benchmarks.daily_omni import QuestionSetError
    from omni_tasks.benchmarks.run_choices import ChoiceRequest, run_choices
    from omni_tasks.names import InvalidName
    from omni_tasks.synthesis.profiles import ProfileError

    req = ChoiceRequest(
        target=target,
        branch=branch,
        dataset=dataset,
        commit=commit,
        seed=seed,
        nightly=parse_date(nightly) if nightly else None,
        concurrency=concurrency,
        limit=limit,
        timeout_s=timeout,
    )
    conn = open_db()
    with conn:
        try:
            key = run_choices(conn, req, show_progress=True)
        except (QuestionSetError, ProfileError, InvalidName) as exc:
            fail(str(exc))
    print(key)


@app.command("bench")
def bench_cmd(
    target: Annotated[
        str, typer.Option(help="http(s)://HOST:PORT of a serving vLLM-Omni, or simulator:PROFILE")
    ],
    branch: Annotated[str, typer.Option(help="Branch the target runs (e.g. main, rebase)")],
    benchmark: Annotated[
        str,
        typer.Option(
            help="seed_tts (speech, graded by ASR; the locale follows the dataset) or daily_omni "
            "(multiple choice over audio: asked as upstream's bench asks, read by its rule)"
        ),
    ] = "seed_tts",
    dataset: Annotated[
        str,
        typer.Option(
            help="demo (the shipped set), a seed-tts-eval locale dir, or a Daily-Omni root "
            "(qa.json and Videos/<id>/<id>_audio.wav)"
        ),
    ] = "demo",
    commit: Annotated[str | None, typer.Option(help="Commit SHA the target runs")] = None,
    seed: Annotated[int, typer.Option(help="Run seed, sent to every stage")] = 42,
    limit: Annotated[int | None, typer.Option(help="Only the first N utterances")] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (default derived)")] = None,
    prompt_template: Annotated[
        str, typer.Option(help="seed-tts-default (the harness's) or read-aloud")
    ] = "seed-tts-default",
    transcript_mode: Annotated[
        bool, typer.Option(help="Simulator only: return what would be heard, no audio (fast)")
    ] = False,
    nightly: Annotated[str | None, typer.Option(help="Nightly date (default today, UTC)")] = None,
    variant: Annotated[str, typer.Option(help="Variant name (config overrides)")] = "default",
    concurrency: Annotated[int, typer.Option(help="Requests in flight")] = 10,
    deploy_config: Annotated[
        Path | None,
        typer.Option(
            help="The target's vLLM-Omni deploy yaml: its per-stage defaults let the run seed "
            "reach every stage (without it, an http(s) target gets no seed)"
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-request deadline, seconds")] = 900.0,
    audio_cap: Annotated[float, typer.Option(help="Stop reading after this much audio (s)")] = 60.0,
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
    With --benchmark daily_omni: ask every question, judge every answer, store them."""
    if benchmark == "daily_omni":
        _ask_choices(target, branch, dataset, commit, seed, limit, nightly, concurrency, timeout)
        return
    if benchmark != "seed_tts":
        fail(
            f"--benchmark: {benchmark!r} cannot run here (seed_tts or daily_omni); other "
            "benchmarks arrive by `omni-tasks import vllm-omni`",
            code=2,
        )
    from omni_tasks.benchmarks.run_seed_tts import BenchError, BenchRequest, run_benchmark
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
    """Serve the simulator in the foreground on loopback (Ctrl-C stops it)."""
    from omni_tasks.synthesis.profiles import ProfileError, load_profile
    from omni_tasks.synthesis.simulator import SimulatorConfig, serve_forever

    try:
        load_profile(profile)
    except ProfileError as exc:
        fail(str(exc))
    serve_forever(SimulatorConfig(profile, transcript_mode), port)


@simulator_app.command("profiles")
def simulator_profiles() -> None:
    """List the simulator's failure profiles and their per-clip rates."""
    from omni_tasks.synthesis.profiles import EVENTS, load_profile, profile_names

    table = Table("profile", "clips", *EVENTS)
    for name in profile_names():
        p = load_profile(name)
        for label, hard, question in (
            ("easy", False, False),
            ("question", False, True),
            ("hard", True, False),
        ):
            rates = p.rates(hard, question)
            table.add_row(name, label, *(f"{rates.get(e, 0.0):.3f}" for e in EVENTS))
    console.print(table)
