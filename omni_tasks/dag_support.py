"""What the DAG files import: params, default args, and one small function per task.

Nothing here touches the DB, the network or Airflow connections at import (DAG files are parsed
often); each task function opens what it needs when it runs. The results DB comes from the
Airflow connection `omni_results` when defined, else from OMNI_DATABASE_URL / the embedded
default; the Slack token from the connection `slack_api_default` when defined, else from env.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

log = logging.getLogger(__name__)

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "omni-tasks",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=5),
    "retry_exponential_backoff": True,
}
GPU_POOL = "gpu"
GPU_SLOTS_PER_SERVER = 2  # thinker on one GPU; talker, code2wav and Whisper on the other


def nightly_params() -> dict[str, Any]:
    """The trigger form of seed_tts_nightly (Param objects built from NightlyParams' defaults)."""
    from airflow.sdk import Param

    from omni_tasks.nightly import NightlyParams

    d = NightlyParams()
    return {
        "branches": Param(d.branches, type="array", description="Branches to benchmark"),
        "baseline": Param(d.baseline, type="string", description="The gate's baseline branch"),
        "commits": Param(d.commits, type="object", description="branch → explicit commit"),
        "targets": Param(d.targets, type="object",
                         description="branch → http(s)://… (serving) or simulator:PROFILE"),
        "transcript_mode": Param(d.transcript_mode, type="boolean",
                                 description="Simulator only: no audio (fast)"),
        "repo": Param(d.repo, type=["null", "string"], description="git repo for branch heads"),
        "variant": Param(d.variant, type="string", description="Variant name"),
        "overrides": Param(d.overrides, type="object",
                           description="Deploy overrides, e.g. stage-0 enforce_eager"),
        "prompt_template": Param(d.prompt_template, type="string",
                                 enum=["seed-tts-default", "read-aloud"]),
        "seeds": Param(d.seeds, type="array", description="Several seeds form a run group"),
        "limit": Param(d.limit, type=["null", "integer"], description="Only the first N clips"),
        "dataset": Param(d.dataset, type="string", description="demo or a locale directory"),
        "grader": Param(d.grader, type="object", description="GraderSpec fields (backend, …)"),
        "environment": Param(d.environment, type="object",
                             description="vllm-serve: {strategy: venv|existing, repo, python}"),
        "server": Param(d.server, type="object",
                        description="vllm-serve: {model, deploy_config, gpus, startup_timeout_s}"),
    }  # fmt: skip


def _airflow_conn_uri(conn_id: str) -> str | None:
    try:
        from airflow.sdk import Connection

        return str(Connection.get(conn_id).get_uri())
    except Exception:  # not defined (or no Airflow context): fall back to settings
        return None


@contextmanager
def results_db() -> Iterator[psycopg.Connection[Any]]:
    from omni_tasks.store.db import connect
    from omni_tasks.store.migrate import migrate

    uri = _airflow_conn_uri("omni_results")
    if uri is not None:
        uri = uri.replace("postgres://", "postgresql://", 1)
    conn = connect(uri)
    try:
        migrate(conn)
        yield conn
    finally:
        conn.close()


def _params(context: dict[str, Any]) -> Any:
    from omni_tasks.nightly import NightlyParams

    return NightlyParams(**dict(context["params"]))


def _nightly(context: dict[str, Any]) -> dt.date:
    when = context.get("logical_date") or context["dag_run"].run_after
    return when.astimezone(dt.UTC).date()


def _is_backfill(context: dict[str, Any]) -> bool:
    return str(getattr(context["dag_run"], "run_type", "")).lower().endswith("backfill")


def record_heads(context: dict[str, Any]) -> list[dict[str, Any]]:
    from omni_tasks import nightly

    with results_db() as conn:
        return nightly.record_heads(
            conn, _params(context), _nightly(context), backfill=_is_backfill(context)
        )


def run_branch(context: dict[str, Any], plan: dict[str, Any]) -> str:
    from omni_tasks import nightly

    context["branch_label"] = f"{plan['branch']} seed {plan['seed']}"
    scheduled = str(context["dag_run"].run_type).lower().endswith("scheduled")
    trigger = "backfill" if _is_backfill(context) else ("nightly" if scheduled else "manual")
    with results_db() as conn:
        return nightly.run_branch(
            conn, _params(context), plan, trigger=trigger,
            airflow_ids=(context["dag"].dag_id, context["run_id"]),
        )  # fmt: skip


def summarize(context: dict[str, Any], run_keys: list[str]) -> list[str]:
    from omni_tasks import nightly
    from omni_tasks.analysis.policy import load_policy

    with results_db() as conn:
        return nightly.summarize(conn, list(run_keys), load_policy())


def decide(context: dict[str, Any], run_keys: list[str]) -> str:
    from omni_tasks import nightly
    from omni_tasks.analysis.policy import load_policy

    params, night = _params(context), _nightly(context)
    with results_db() as conn:
        out = nightly.decide_night(
            conn, night, load_policy(), benchmark=params.bench, baseline_branch=params.baseline,
            expect=tuple(params.branches),
        )  # fmt: skip
    for d in out.decisions:
        log.info("%s vs %s (%s): %s%s", d["candidate"], d["baseline"], d["variant"],
                 d["verdict"], " confirmed" if d["confirmed"] else "")  # fmt: skip
    return night.isoformat()


def refresh(context: dict[str, Any], night: str) -> dict[str, str]:
    from omni_tasks import nightly
    from omni_tasks.analysis.policy import load_policy

    with results_db() as conn:
        out = nightly.refresh_outputs(conn, _params(context).bench, dt.date.fromisoformat(night),
                                      load_policy().primary_tau)  # fmt: skip
    log.info("grafana: %s; report: %s", out["grafana"], out["report"])
    return out


def dispatch_alerts(context: dict[str, Any]) -> str:
    from omni_tasks import nightly

    token = channel = None
    try:
        from airflow.sdk import Connection

        slack = Connection.get("slack_api_default")
        token, channel = slack.password, (slack.extra_dejson or {}).get("channel")
    except Exception:  # no Airflow connection: env settings (or the local outbox)
        pass
    with results_db() as conn:
        summary = nightly.dispatch_alerts(conn, token, channel)
    log.info("alerts: %s", summary)
    return summary


def on_task_failure(context: dict[str, Any]) -> None:
    """Failure callback: an INFRA alert through the outbox (delivered by the next dispatch)."""
    from omni_tasks import nightly
    from omni_tasks.config import get_settings

    ti = context["ti"]
    error = str(context.get("exception") or "unknown error")
    try:
        with results_db() as conn:
            nightly.task_failed(conn, get_settings().benchmark, ti.dag_id, ti.task_id,
                                context["run_id"], ti.try_number, error)  # fmt: skip
    except Exception:  # a callback must never raise; the failure is in Airflow's log anyway
        log.exception("could not record the failure of %s as an INFRA alert", ti.task_id)


def bisect_params() -> dict[str, Any]:
    from airflow.sdk import Param

    return {
        "history": Param([], type="array", description="Commits, oldest (good) to newest (bad)"),
        "target": Param("simulator:commit-history", type="string",
                        description="http(s)://… or simulator:PROFILE"),
        "branch": Param("rebase", type="string"),
        "baseline": Param("main", type="string"),
        "first_bad": Param(None, type=["null", "string"],
                           description="simulator:commit-history: where the step is planted"),
        "transcript_mode": Param(False, type="boolean"),
        "dataset": Param("demo", type="string"),
        "limit": Param(None, type=["null", "integer"]),
        "seed": Param(1000, type="integer"),
        "alpha": Param(0.05, type="number"),
        "max_repeats": Param(3, type="integer"),
    }  # fmt: skip


def bisect(context: dict[str, Any]) -> dict[str, Any]:
    from omni_tasks.bisection import BisectParams, run_bisect, summary

    p = BisectParams(**dict(context["params"]))
    with results_db() as conn:
        result = run_bisect(conn, p, _nightly(context))
    log.info("%s", summary(p, result))
    return {"first_bad": result.first_bad, "last_good": result.last_good,
            "steps": len(result.steps), "evaluations": result.evaluations}  # fmt: skip


def regrade_params() -> dict[str, Any]:
    from airflow.sdk import Param

    from omni_tasks.grading.asr import BACKENDS
    from omni_tasks.grading.windows import HARNESS_WINDOW, WINDOWS

    return {
        "run_key": Param("", type="string", description="Run whose stored audio to grade"),
        "backend": Param("faster-whisper", type="string", enum=list(BACKENDS)),
        "model": Param(None, type=["null", "string"]),
        "precision": Param(None, type=["null", "string"]),
        "window": Param(
            None, type=["null", "string"], enum=[None, *WINDOWS],
            description="Default: the harness version's window policy, else truncate30",
        ),
        "harness_version": Param(
            None, type=["null", "string"], enum=[None, *HARNESS_WINDOW],
            description="The vllm-omni reference harness the re-grade must match",
        ),
        "device": Param("cpu", type="string"),
        "batch_size": Param(8, type="integer"),
    }  # fmt: skip


def regrade(context: dict[str, Any]) -> dict[str, Any]:
    from omni_tasks.grading.asr import GraderSpec, load_grader
    from omni_tasks.grading.grade import grade_run

    p = dict(context["params"])
    grader = load_grader(GraderSpec(
        backend=p["backend"], model=p["model"], precision=p["precision"], window=p["window"],
        device=p["device"], batch_size=p["batch_size"], harness_version=p.get("harness_version"),
    ))  # fmt: skip
    with results_db() as conn:
        out = grade_run(conn, p["run_key"], grader, show_progress=False)
        conn.commit()
    return {"grading_id": out.grading_id, "grader_id": out.grader_id, "created": out.created}


def check_freshness(context: dict[str, Any]) -> list[str]:
    from omni_tasks.bisection import check_freshness as check
    from omni_tasks.config import get_settings

    branches = list(context["params"]["branches"])
    night = _nightly(context)
    with results_db() as conn:
        missing = check(conn, get_settings().benchmark, branches, night)
    if missing:
        log.warning("no results for %s on %s: INFRA alert queued", ", ".join(missing), night)
    return missing
