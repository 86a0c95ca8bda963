"""Run a benchmark against a target (any family); the local simulator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, fail, json_out, simulator_app

if TYPE_CHECKING:
    from omni_tasks.benchmarks.base import Benchmark
    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.contracts import JsonObject


@app.command("bench")
def bench_cmd(
    target: opt.TargetOpt,
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
    commit: opt.CommitOpt = None,
    seed: Annotated[int, typer.Option(help="Run seed, sent to every stage")] = 42,
    limit: opt.LimitOpt = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (default derived)")] = None,
    prompt_template: Annotated[
        str | None,
        typer.Option(help="seed-TTS: seed-tts-default (the harness's, the default) or read-aloud"),
    ] = None,
    transcript: opt.TranscriptOpt = False,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="seed-TTS: chat (/v1/chat/completions, an omni model; the default) or "
            "audio-speech (/v1/audio/speech, a TTS model: upstream's --backend "
            "openai-audio-speech; the run's variant is audio-speech)"
        ),
    ] = None,
    nightly: opt.NightlyOpt = None,
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
        float | None,
        typer.Option(
            help="seed-TTS: stop reading after this much audio (s; default 60); a run on a "
            "harness version reads up to --timeout, as the harness does"
        ),
    ] = None,
    backend: opt.BackendOpt = "faster-whisper",
    model: opt.ModelOpt = None,
    precision: opt.PrecisionOpt = None,
    window: opt.WindowOpt = None,
    harness_version: opt.HarnessOpt = None,
    batch_size: opt.BatchOpt = 8,
    device: opt.DeviceOpt = "cpu",
    as_json: opt.JsonFlag = False,
) -> None:
    """Run a benchmark against a target through its family (seed-TTS: synthesize and grade
    every clip; another: ask and judge every item), store every item; print the run key."""
    family = _family(benchmark, dataset)
    req = _request(
        family,
        {
            opt.TRANSCRIPT: transcript,
            "prompt_template": prompt_template,
            "audio_cap_s": audio_cap,
            "endpoint": endpoint,
        },
        target=target,
        branch=branch,
        dataset=dataset,
        commit=commit,
        seed=seed,
        limit=limit,
        run_key=run_key,
        nightly=opt.night_or_today(nightly),
        variant=variant,
        concurrency=concurrency,
        timeout_s=timeout,
        harness_version=harness_version,
        deploy_config=deploy_config,
        # seed_tts names the family: the dataset's locale names the benchmark.
        benchmark=family.id if family.id == benchmark else None,
    )
    grader: JsonObject = {
        "backend": backend,
        "model": model,
        "precision": precision,
        "window": window,
        "batch_size": batch_size,
        "device": device,
        "harness_version": harness_version,
    }
    _run(family, req, grader, as_json)


def _request(family: Benchmark, options: dict[str, object], **fields: Any) -> RunRequest:
    """The family's run request of the generic fields and the run options that were set."""
    from omni_tasks.benchmarks.request import BenchError, RunRequest

    with opt.fails_on(BenchError):
        return family.request(RunRequest(**fields), opt.run_options(options))


def _run(family: Benchmark, req: RunRequest, grader: JsonObject, as_json: bool) -> None:
    """Run and store it; print its outcome (JSON, or the summary and the run key)."""
    from omni_tasks.benchmarks.outcome import run_outcome
    from omni_tasks.offline_models import OfflineModelError

    outcome = opt.on_db(
        lambda conn: run_outcome(conn, family.run(conn, req, grader, show_progress=not as_json)),
        ValueError,  # a dataset, a grader, …
        LookupError,
        OfflineModelError,
        OSError,
    )
    if as_json:
        json_out(outcome)
    else:
        console.print(outcome.summary(), soft_wrap=True)
        print(outcome.run_key)
    if outcome.run_status == "failed":  # stored (nothing is lost), but not a result: exit 1
        fail(f"run {outcome.run_key} failed: {outcome.failure}")


def _family(option: str, dataset: str) -> Benchmark:
    """The family `bench --benchmark` names (its bench option, seed_tts, or a benchmark), if it
    can run here on --dataset."""
    from omni_tasks import benchmarks

    named = [b for b in benchmarks.all_benchmarks() if b.bench_option == option]
    with opt.fails_on(benchmarks.UnknownBenchmark, code=2):
        family = named[0] if named else benchmarks.get(option)
    if not family.runnable:
        fail(f"--benchmark {option} cannot run here: it arrives by `omni-tasks import`", code=2)
    if problem := family.check_dataset(dataset):
        fail(f"--dataset: {problem}", code=2)
    return family


@simulator_app.command("serve")
def simulator_serve(
    profile: Annotated[str, typer.Option(help="main, rebase or clean (profiles.yaml)")] = "main",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free one)")] = 8091,
    transcript: Annotated[
        bool, typer.Option(opt.TRANSCRIPT_FLAG, help="Return what would be heard instead of audio")
    ] = False,
) -> None:
    """Serve the simulator in the foreground on loopback (Ctrl-C stops it). It answers seed-TTS
    requests, and every registered family's items as the family says (`benchmarks list`)."""
    from omni_tasks import benchmarks
    from omni_tasks.synthesis.profiles import ProfileError, load_profile
    from omni_tasks.synthesis.simulator import SimulatorConfig, serve_forever

    with opt.fails_on(ProfileError):
        load_profile(profile)
    config = SimulatorConfig(profile, transcript, answerers=benchmarks.answerers())
    serve_forever(config, port)


@simulator_app.command("profiles")
def simulator_profiles(wide: opt.WideFlag = False) -> None:
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
