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
    """The trigger form of seed_tts_nightly. Every field is empty by default: the deployment
    config (omni_tasks.deployment) supplies the run; a non-empty field overrides it once."""
    from airflow.sdk import Param

    def field(kind: str, description: str, **kw: Any) -> Any:
        return Param(None, type=["null", kind], description=description, **kw)

    return {
        "branches": field("array", "Branches to benchmark"),
        "baseline": field("string", "The gate's baseline branch"),
        "commits": field("object", "branch → explicit commit"),
        "targets": field("object", "branch → vllm-serve, http(s)://…, {url, deploy_config} or "
                         "simulator:PROFILE"),
        "transcript_mode": field("boolean", "Simulator only: no audio (fast)"),
        "repo": field("string", "git repo for branch heads"),
        "variant": field("string", "Variant name"),
        "overrides": field("object", "Deploy overrides, e.g. stage-0 enforce_eager"),
        "prompt_template": field("string", "seed-tts-default or read-aloud",
                                 enum=[None, "seed-tts-default", "read-aloud"]),
        "seeds": field("array", "Several seeds form a run group"),
        "limit": field("integer", "Only the first N clips"),
        "dataset": field("string", "demo or a locale directory"),
        "grader": field("object", "GraderSpec fields (backend, harness_version, …)"),
        "environment": field("object", "vllm-serve: {strategy: venv|existing, repo, python}"),
        "server": field("object", "vllm-serve: {model, deploy_config, gpus, startup_timeout_s}"),
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
    """The run's parameters (deployment config + trigger form). A config error fails the task
    at once, without retries, naming the field."""
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, ConfigError, resolve

    run_type = str(getattr(context["dag_run"], "run_type", "")).lower()
    try:
        return resolve(
            dict(context["params"]),
            Variable.get(VARIABLE, default=None),
            scheduled=run_type.endswith(("scheduled", "backfill")),
        )
    except ConfigError as exc:
        raise AirflowFailException(f"deployment config: {exc}") from None


def _nightly(context: dict[str, Any]) -> dt.date:
    when = context.get("logical_date") or context["dag_run"].run_after
    return when.astimezone(dt.UTC).date()


def _is_backfill(context: dict[str, Any]) -> bool:
    return str(getattr(context["dag_run"], "run_type", "")).lower().endswith("backfill")


@contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Stop the task after `seconds` (the deployment config's GPU timeout, read at run time, so
    it cannot be an operator argument). A launched server is stopped by its own context
    manager as the timeout unwinds; finished clips stay stored."""
    import signal

    from airflow.sdk.exceptions import AirflowTaskTimeout

    def expire(signum: int, frame: Any) -> None:
        raise AirflowTaskTimeout(f"{what}: over the GPU task timeout of {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
    params = _params(context)
    timeout = deadline(params.gpu_task_timeout_s, f"run_branch {context['branch_label']}")
    with timeout, results_db() as conn:
        return nightly.run_branch(
            conn, params, plan, trigger=trigger,
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


def fail_the_run() -> None:
    """The nightly's watcher: runs only when a task failed, and fails the DAG run with it."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException("a task of this nightly failed (its log says why); alerts sent")


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
