"""The nightly, step by step: what each task of `omni_nightly` calls.

    record_heads → (prepare environment +) run_branch per series × branch × seed, on its
    lane → summarize_night → jobs.decide.decide_fleet (per series: load, decide, write)
    → refresh_outputs → (alerts.slack.dispatch)

A night holds one or more series (model × benchmark × lane, omni_tasks.series); each is
decided against its own baseline, and one series that cannot be decided never holds back
another's decision, report or alerts.

Every step is idempotent (a retried task converges): heads are recorded once per night, a
stored run is not synthesized again, statistics and decisions are upserts, alert messages carry
idempotency keys. Steps pass small plain values (plans, run keys), never clip data.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from omni_tasks import benchmarks
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.config import get_settings
from omni_tasks.contracts import BranchPlan, JsonObject
from omni_tasks.deployment.schema import (
    ImageEnvironment,
    NightlyParams,
    ServerConfig,
    Serving,
    VenvEnvironment,
)
from omni_tasks.jobs.statistics import compute_stats_for_key
from omni_tasks.records import LineageFlags
from omni_tasks.series import Series
from omni_tasks.store import heads, results
from omni_tasks.trust.names import check_branch, path_component

if TYPE_CHECKING:
    from omni_tasks.benchmarks.request import RunRequest
    from omni_tasks.synthesis.stages import LaneDeploy


def _git_head(repo: str, branch: str, before: dt.date | None) -> str | None:
    args = ["git", "-C", repo, "rev-list", "-1"]
    if before is not None:
        args.append(f"--before={before.isoformat()}T23:59:59Z")
    # A branch from the trigger form is data: checked as a ref, and after --end-of-options so
    # git never reads it as an option ("--" would make rev-list read it as a path).
    args += ["--end-of-options", check_branch(branch)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    return out.stdout.strip() or None


def record_heads(
    conn: psycopg.Connection[Any],
    series: list[NightlyParams],
    nightly: dt.date,
    *,
    backfill: bool,
) -> list[BranchPlan]:
    """Each series' branch commits for the night, recorded in `branch_head` (first sighting
    wins), as one plan per series × branch × seed for the GPU tasks.

    Explicit commits win; then the head recorded that night; then the repo's head (for a
    backfill: the last commit before the date, flagged reconstructed); without a repo the
    simulator targets get a stable synthetic head per branch and night."""
    plans = []
    for params in series:
        for branch in params.branches:
            recorded = heads.recorded_head(conn, params.bench, branch, nightly)
            reconstructed = False
            if branch in params.commits:
                commit = params.commits[branch]
            elif recorded is not None:
                commit, reconstructed = recorded.commit_sha, recorded.reconstructed
            elif params.repo:
                commit = _git_head(params.repo, branch, nightly if backfill else None) or ""
                reconstructed = backfill
                if not commit:
                    raise ValueError(f"no commit of {branch} in {params.repo} before {nightly}")
            else:
                commit = hashlib.sha1(f"{branch}@{nightly}".encode()).hexdigest()
            heads.record_head(conn, params.bench, branch, nightly, commit, reconstructed)
            plans += [
                BranchPlan(
                    series=params.series.key,
                    variant=params.variant,
                    lane=params.lane,
                    label=f"{params.series.label} {branch} seed {seed}",
                    branch=branch,
                    commit=commit,
                    seed=seed,
                    nightly=nightly.isoformat(),
                    reconstructed=reconstructed,
                )
                for seed in params.seeds
            ]
        conn.commit()
    return plans


def run_branch(
    conn: psycopg.Connection[Any],
    params: NightlyParams,
    plan: BranchPlan,
    *,
    trigger: str,
    airflow_ids: tuple[str | None, str | None] = (None, None),
    show_progress: bool = False,
) -> str:
    """Run, judge and store one series × branch × seed of the night (the series' benchmark
    builds its request and does both: Benchmark.request, Benchmark.run); returns its run key."""
    if plan.branch not in params.targets:
        raise ValueError(f"no target for branch {plan.branch!r} (params.targets)")
    nightly = dt.date.fromisoformat(plan.nightly)
    recorded = heads.recorded_head(conn, params.bench, plan.branch, nightly)
    lineage: LineageFlags = {
        "differs_from_recorded_head": None
        if recorded is None
        else recorded.commit_sha != plan.commit,
        "reconstructed_head": plan.reconstructed,
    }
    generic = night_request(
        params,
        plan.branch,
        airflow_ids,
        commit=plan.commit,
        seed=plan.seed,
        limit=params.limit,
        nightly=nightly,
        trigger=trigger,
        observed_head=None if recorded is None else recorded.commit_sha,
        lineage=lineage,
    )
    return run_on_target(conn, params, generic, params.grader, show_progress=show_progress)


def night_request(
    params: NightlyParams,
    branch: str,
    airflow_ids: tuple[str | None, str | None],
    **fields: Any,
) -> RunRequest:
    """A run of the night's for `branch` (the nightly's, a same-morning re-run's): its target,
    dataset, variant, overrides, series, harness and Airflow run as `params` say; `fields`
    the rest (commit, seed, night, trigger, which items…)."""
    from omni_tasks.benchmarks.request import RunRequest

    deploy = params.target_deploy_config(branch)
    return RunRequest(
        target=params.target_url(branch),
        branch=branch,
        dataset=params.dataset,
        variant=params.variant,
        overrides=params.overrides,
        benchmark=params.bench,
        model=params.series.model,
        lane=params.lane,
        airflow_dag_id=airflow_ids[0],
        airflow_run_id=airflow_ids[1],
        harness_version=params.grader.get("harness_version"),
        deploy_config=Path(deploy) if deploy else None,
        **fields,
    )


def run_on_target(
    conn: psycopg.Connection[Any],
    params: Serving,
    generic: RunRequest,
    grader: JsonObject,
    *,
    show_progress: bool = False,
    then: Callable[[RunRequest], object] | None = None,
) -> str:
    """One run of any job (the nightly's, a bisection's, an ablation's): the family builds its
    request from `generic` and runs and judges its own items (Benchmark.request,
    Benchmark.run); a `vllm-serve` target is the commit's own server, as `params` launch it
    (`served`). `then` sees the request as it ran. Committed; returns the run key."""
    family = benchmarks.get(params.bench)

    def run(r: RunRequest) -> str:
        key = family.run(conn, r, grader, show_progress=show_progress)
        if then is not None:
            then(r)
        return key

    req = family.request(generic, params.options)
    key = served(conn, params, req, run) if generic.target == "vllm-serve" else run(req)
    conn.commit()
    return key


R = TypeVar("R")


def served(
    conn: psycopg.Connection[Any],
    params: Serving,
    req: RunRequest,
    run: Callable[[RunRequest], R],
) -> R:
    """Launch the commit's own server (its environment, its GPUs, a free port), `run` the
    request (any family's) against it with the server's provenance on the run, stop it."""
    from omni_tasks.environments.existing import ExistingStrategy
    from omni_tasks.environments.gpus import gpu_lease
    from omni_tasks.environments.venv import VenvStrategy
    from omni_tasks.synthesis.server import (
        ServerSpec,
        effective_deploy_config,
        launched,
        provenance,
    )
    from omni_tasks.synthesis.stages import lane_deploy

    env_cfg, srv = params.environment, params.server
    # The flags upstream's test serves the model with for this family (MiniCPM-o's Daily-Omni
    # interleaves its image/audio parts).
    args = benchmarks.get(params.bench).server_args(srv.model)
    if isinstance(env_cfg, ImageEnvironment):
        return _served_from_image(env_cfg, srv, req, run, args)
    strategy = (
        VenvStrategy(
            str(env_cfg.repo),
            Path(env_cfg.root) if env_cfg.root else get_settings().home / "envs",
            env_cfg.requirements,
            vllm=env_cfg.vllm,
            vllm_index=env_cfg.vllm_index,
        )
        if isinstance(env_cfg, VenvEnvironment)
        else ExistingStrategy(env_cfg.python)
    )
    env = strategy.prepare(str(req.commit))
    name = path_component(f"{req.branch}_{req.nightly}_{str(req.commit)[:12]}")
    log = get_settings().home / "server-logs" / f"{name}.log"
    deploy = Path(srv.deploy_config) if srv.deploy_config else None
    # The Qwen3-Omni deploy as upstream's accuracy test serves it on the lane's platform.
    lane = lane_deploy(deploy, srv.gpu_resource, params.overrides)
    with gpu_lease(srv.gpus) as gpus:
        spec = ServerSpec(
            python=str(env.python),
            model=srv.model,
            log_path=log,
            deploy_config=deploy,
            deploy_overrides=lane.overrides,
            gpus=tuple(int(g) for g in gpus),
            env=srv.env,
            startup_timeout_s=srv.startup_timeout_s,
            extra_args=args,
        )
        # The deploy config the server will run with, read into the request before it starts:
        # one a family cannot use (seed-TTS: without the three stages) is an error before any
        # GPU time or request.
        deployed = effective_deploy_config(spec)
        req = dataclasses.replace(req, deploy_config=deployed)
        prov = provenance(
            spec,
            repo=Path(params.repo) if params.repo else None,
            commit=req.commit,
            recorded_head=req.observed_head,
        )
        with launched(spec) as server:
            served = dataclasses.replace(
                req,
                target=server.url,
                model=spec.model,  # ask for the model the server was started with
                stack={
                    **prov.stack_record(),
                    "server_log": str(log),
                    "server_args": list(args),
                    "vllm_build": env.details.get("vllm_build"),
                    "deploy": _served_deploy(deployed, lane),
                },
                gpu_class=prov.gpu_class,
                lineage={**req.lineage, **prov.lineage.flags()},
                commit_time=prov.commit_time,
            )
            return run(served)


def _served_deploy(deployed: Path | None, lane: LaneDeploy) -> dict[str, object]:
    """The deploy a launched server ran with, as the run keeps it: the effective file (beside
    the server log) and its contents, the lane's platform, and the upstream source it follows."""
    import yaml

    config = yaml.safe_load(deployed.read_text(encoding="utf-8")) if deployed else None
    return {
        "file": None if deployed is None else str(deployed),
        "platform": lane.platform,
        "config": config,
        "upstream": lane.source,
    }


def _served_from_image(
    env: ImageEnvironment,
    server: ServerConfig,
    req: RunRequest,
    run: Callable[[RunRequest], R],
    args: tuple[str, ...] = (),
) -> R:
    """The commit's image as a Kubernetes pod on the lane's accelerators (environments.pods),
    served with `args`; the run records the image and pod it ran against."""
    from omni_tasks.environments.pods import PodSpec, launched_pod

    spec = dataclasses.replace(PodSpec.of(env, server, str(req.commit)), extra_args=args)
    with launched_pod(spec) as pod:
        return run(
            dataclasses.replace(
                req,
                target=pod.url,
                model=server.model,
                stack={
                    "image": pod.image,
                    "pod": pod.name,
                    "namespace": pod.namespace,
                    "server_args": list(args),
                },
            )
        )


def summarize(conn: psycopg.Connection[Any], run_keys: list[str], policy: GatePolicy) -> list[str]:
    """Per-run statistics at every τ the policy reports (upserts run_stats)."""
    for key in run_keys:
        for tau in policy.taus:
            compute_stats_for_key(conn, key, tau, policy)
    conn.commit()
    return run_keys


def summarize_night(
    conn: psycopg.Connection[Any], series: list[NightlyParams], nightly: dt.date, policy: GatePolicy
) -> list[str]:
    """Statistics of every graded run the night's series stored, whichever GPU task wrote it
    (a failed task's siblings are summarized all the same); returns their run keys."""
    keys_ = [
        r.run_key
        for s in {p.series for p in series}
        for r in results.nightly_runs(conn, s, nightly)
        if r.grading_id is not None
    ]
    return summarize(conn, keys_, policy)


def write_report(conn: psycopg.Connection[Any], s: Series, nightly: dt.date, tau: float) -> Path:
    """A series' HTML report of the night, written whole (a reader never sees half of one)."""
    from omni_tasks.reports.html import nightly_report, report_path, write_page

    return write_page(report_path(s.slug, nightly), nightly_report(conn, s, nightly, tau))


@dataclasses.dataclass(frozen=True)
class Outputs:
    """Where a night's outputs went: Grafana's refresh, in a line, and the reports written."""

    grafana: str
    reports: list[str]


def refresh_outputs(
    conn: psycopg.Connection[Any], series: list[Series], nightly: dt.date, tau: float
) -> Outputs:
    """Each series' HTML report of the night, then Grafana (when configured); returns where
    things are. A Grafana outage fails this task (so it is retried) after the reports are
    written; one series' report failing does not keep the others from being written."""
    from omni_tasks.grafana.push import refresh

    reports, failed = [], []
    for s in dict.fromkeys(series):
        try:
            # The reports first: they must exist even when Grafana is down.
            reports.append(str(write_report(conn, s, nightly, tau)))
        except (psycopg.Error, ValueError, ArithmeticError, LookupError, OSError) as exc:
            conn.rollback()
            failed.append(f"{s.label}: {type(exc).__name__}: {exc}")
    summary = refresh(conn).summary
    if failed:
        raise RuntimeError(f"reports not written ({'; '.join(failed)}); written: {reports}")
    return Outputs(summary, reports)
