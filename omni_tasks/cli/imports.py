"""Import results produced elsewhere (vLLM-Omni artifacts, Buildkite)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import console, err, fail, import_app, json_out, parse_date, say
from omni_tasks.config import read_secret

if TYPE_CHECKING:
    from omni_tasks.benchmarks import ImportOptions
    from omni_tasks.importers.buildkite import ImportReport


@import_app.command("vllm-omni")
def import_vllm_omni(
    files: Annotated[
        list[Path],
        typer.Argument(help="Results JSON files of `vllm bench serve` (seed-TTS, Daily-Omni...)"),
    ],
    branch: Annotated[
        str, typer.Option(metavar="BRANCH", help="Branch the artifact was produced on")
    ],
    commit: Annotated[
        str | None, typer.Option(metavar="SHA", help="Commit SHA benchmarked")
    ] = None,
    nightly: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Nightly date YYYY-MM-DD (default: the artifact's date)"),
    ] = None,
    run_key: Annotated[str | None, typer.Option(help="Explicit run key (one file only)")] = None,
    benchmark: Annotated[
        str | None,
        typer.Option(
            metavar="BENCHMARK",
            help="Benchmark id (see `benchmarks list`); default: detected from each file",
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option(help="Overwrite a run key holding other content")
    ] = False,
    audio_root: Annotated[
        Path | None,
        typer.Option(
            help="Directory the artifact's audio_path files may lie in (they are copied into "
            "the audio root); other paths are stored as audio unavailable"
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The seed-tts-eval locale dir the run used: fills the reference text of failure "
            "items (upstream writes none for them)",
        ),
    ] = None,
    harness_version: opt.ArtifactHarnessOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
) -> None:
    """Import vLLM-Omni results JSON files, one run each; prints each run key. The benchmark
    (seed_tts_en/zh, daily_omni, videomme) is detected from each file's keys; --model and
    --lane name the series the runs belong to (an artifact does not say)."""
    from omni_tasks import benchmarks
    from omni_tasks.evidence.audio import AudioUnavailable
    from omni_tasks.store.runs import RunConflictError, save_run
    from omni_tasks.trust.names import InvalidName, check_run_key

    if run_key and len(files) > 1:
        fail("--run-key names one run; import one file at a time with it")
    if model is not None or lane is not None:
        opt.series_of(benchmark, model, lane)  # a bad model or lane name is bad usage (exit 2)
    if run_key is not None:
        with opt.fails_on(InvalidName):
            check_run_key(run_key)
    options = _import_options(branch, commit, nightly, audio_root, dataset, harness_version)
    parsed = []
    for f in files:
        with opt.fails_on(benchmarks.ArtifactError, AudioUnavailable):
            art = benchmarks.import_artifact(f, options, benchmark)
            spec = dataclasses.replace(
                art.spec, model=model or art.spec.model, lane=lane or art.spec.lane
            )
            art = dataclasses.replace(art, spec=spec)
            parsed.append(benchmarks.adopt_audio(art, str(audio_root)) if audio_root else art)

    def store(conn: Any) -> None:
        for art in parsed:
            for w in art.warnings:
                err.print(f"[yellow]warning:[/] {w}")
            grading = (art.grader, art.grades) if art.has_clips else None
            res = save_run(conn, art.spec, art.clips, grading, run_key=run_key, replace=replace)
            say(f"{res.outcome}: {art.spec.benchmark}, {len(art.clips)} items ({art.spec.status})")
            sys.stdout.write(res.run_key + "\n")

    opt.on_db(store, RunConflictError)


def _import_options(
    branch: str,
    commit: str | None,
    nightly: str | None,
    audio_root: Path | None,
    dataset: Path | None,
    harness_version: str | None,
) -> ImportOptions:
    """What every file of an import is read with: its branch, checked commit, night, the
    roots its audio may lie in, and the reference texts of --dataset."""
    from omni_tasks.benchmarks import ImportOptions
    from omni_tasks.evidence.audio import audio_roots
    from omni_tasks.trust.commits import check_commit
    from omni_tasks.trust.names import InvalidName

    references = None
    if dataset is not None:
        from omni_tasks.dataset import DatasetError, load_dataset

        with opt.fails_on(DatasetError):
            references = {u.utt_id: u.target_text for u in load_dataset(dataset).utterances}
    with opt.fails_on(InvalidName):
        return ImportOptions(
            branch=branch,
            commit=None if commit is None else check_commit(commit, "--commit"),
            nightly=parse_date(nightly) if nightly else None,
            audio_roots=audio_roots() + ([str(audio_root)] if audio_root else []),
            references=references,
            harness_version=harness_version,
        )


@import_app.command("buildkite")
def import_buildkite(
    org: Annotated[str, typer.Option(help="Buildkite organization slug (e.g. vllm)")],
    pipeline: Annotated[
        list[str],
        typer.Option(
            help="Pipeline slug, or a rules role: cuda, amd, npu (repeat for several: "
            "vllm-omni, ...)"
        ),
    ],
    branch: Annotated[
        str | None, typer.Option(metavar="BRANCH", help="Only builds of this branch")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only builds created on/after YYYY-MM-DD")
    ] = None,
    rules: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Artifact rules (pipeline, path glob → benchmark, model, lane); default: the "
            "shipped ones for vLLM-Omni's CUDA, AMD and NPU pipelines",
        ),
    ] = None,
    base_url: Annotated[str, typer.Option(help="API base (tests: a local server)")] = (
        "https://api.buildkite.com/v2"
    ),
    harness_version: opt.ArtifactHarnessOpt = None,
    upstream_checkout: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="A git checkout of vllm-omni: each upstream gate's threshold is read from its "
            "test file at the build's commit (default: the gate table's dated thresholds)",
        ),
    ] = None,
    artifact_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host artifact downloads may come from besides the API (repeat; default: "
            "Buildkite's S3 storage). A host named here may be a private address",
        ),
    ] = None,
    slug: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ROLE=SLUG",
            help="A rules role's pipeline slug where it is not the rules file's (repeat; e.g. "
            "amd=SLUG: AMD's pipeline slug is unverified)",
        ),
    ] = None,
    as_json: opt.JsonFlag = False,
) -> None:
    """Import the accuracy artifacts of Buildkite pipelines' builds (idempotent): each one the
    rules match is a run of its series, with upstream's own gate verdict beside it; JSON
    artifacts no rule matches are listed.

    The token comes from BUILDKITE_API_TOKEN (scopes read_builds, read_artifacts).
    """
    from omni_tasks.importers.buildkite import (
        ARTIFACT_HOSTS,
        BuildkiteError,
        BuildkiteSource,
        import_pipeline,
    )
    from omni_tasks.importers.identity import RULES, load_rules, pipeline_slugs

    token = read_secret("BUILDKITE_API_TOKEN")
    if not token:
        fail(
            "set BUILDKITE_API_TOKEN_FILE (or BUILDKITE_API_TOKEN): a Buildkite API token with "
            "read_builds, read_artifacts"
        )

    given = {role: value for role, _, value in (s.partition("=") for s in slug or ())}
    with opt.fails_on(BuildkiteError):
        chosen = tuple(load_rules(rules or RULES, given))
        roles = pipeline_slugs(rules or RULES, given)

    def run(conn: Any) -> dict[str, ImportReport]:
        sources = (
            BuildkiteSource(
                org=org,
                pipeline=roles.get(name, name),
                token=token,
                base_url=base_url,
                branch=branch,
                since=parse_date(since) if since else None,
                harness_version=harness_version,
                rules=chosen,
                upstream_checkout=upstream_checkout,
                artifact_hosts=tuple(artifact_host) if artifact_host else ARTIFACT_HOSTS,
            )
            for name in pipeline
        )
        return {src.pipeline: import_pipeline(conn, src) for src in sources}

    reports = opt.on_db(run, BuildkiteError)
    if as_json:
        json_out(reports)
        return
    for name, report in reports.items():
        _print_report(name, report)


def _print_report(slug: str, report: ImportReport) -> None:
    """What a pipeline's import did: its problems on stderr, the counts, each run key."""
    for line in (
        *(f"[yellow]warning:[/] {slug} {w}" for w in report.warnings),
        *(f"[red]error:[/] {slug} {e}" for e in report.errors),
        *(f"[yellow]unknown artifact (no rule):[/] {slug} build {u}" for u in report.unknown),
        *(f"[red]night not valid:[/] {n}" for n in report.invalid),
        *(f"[yellow]build {b}[/]" for b in report.skipped_builds),
        *(f"[yellow]refused:[/] {slug} {r}" for r in report.refused),
    ):
        err.print(line)
    console.print(
        f"{slug}: imported {len(report.imported)} run(s) and {len(report.retries)} "
        f"superseded attempt(s) as retries, skipped {report.skipped} already imported; "
        f"{len(report.builds_without_artifact)} build(s) without a known artifact",
    )
    for key in report.imported:
        print(key)
