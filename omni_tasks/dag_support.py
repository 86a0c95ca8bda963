"""What the DAG files import: params, default args, and one small function per task.

Nothing here touches the DB, the network or Airflow connections at import (DAG files are parsed
often); each task function opens what it needs when it runs. The results DB comes through
PostgresHook (connection `omni_results`) when defined, else from OMNI_DATABASE_URL / the
embedded default; Slack through SlackHook (`slack_api_default`) when defined, else from env,
else the local outbox. A defined but broken connection fails the task; it never falls back.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import psycopg


log = logging.getLogger(__name__)

# Every task has an execution_timeout: a CPU task (stats, gate, reports, delivery) 2 h; a GPU
# task of the nightly its lane's `execution_timeout_s` (deployment config); a bisection,
# ablation or A/B (many runs in one task) a day; a re-grade 6 h.
DEFAULT_ARGS: dict[str, Any] = {
    "owner": "omni-tasks",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=5),
    "retry_exponential_backoff": True,
    "execution_timeout": dt.timedelta(hours=2),
}
LONG_TASK_TIMEOUT = dt.timedelta(hours=24)
REGRADE_TIMEOUT = dt.timedelta(hours=6)
GPU_POOL = "gpu"
GPU_SLOTS_PER_SERVER = 2  # thinker on one GPU; talker, code2wav and Whisper on the other


def nightly_params() -> dict[str, Any]:
    """The trigger form of seed_tts_nightly, in sections. Every field is empty by default: the
    deployment config (omni_tasks.deployment) supplies the run; a non-empty field overrides it
    once. Choices are offered as proposals (`examples`), never as a select showing `null`; the
    first task checks every value against the config before any other work."""
    from airflow.sdk import Param

    from omni_tasks import benchmarks
    from omni_tasks.trust import forms

    def field(kind: str | list[str], section: str, title: str, description: str, **kw: Any) -> Any:
        return Param(
            None,
            type=["null", *([kind] if isinstance(kind, str) else kind)],
            title=title,
            section=section,
            description=description,
            **kw,
        )

    what, where, how = "What to benchmark", "Where it runs", "How it is graded"
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    return {
        "benchmark": field(
            "string", what, "Benchmark", "See `omni-tasks benchmarks list`", examples=runnable
        ),
        "branches": field(
            "array", what, "Branches", 'e.g. ["main", "vllm-rebase"]', items={"type": "string"}
        ),
        "baseline": field("string", what, "Baseline branch", "The gate compares against it"),
        "dataset": field(
            "string",
            what,
            "Dataset",
            "demo, a seed-tts-eval locale dir or a Daily-Omni root (under a trusted root)",
        ),
        "limit": field("integer", what, "Only the first N items", "Unset: all", minimum=1),
        "seeds": field(
            "array",
            what,
            "Seeds",
            "Several form a run group, e.g. [1, 2, 3]",
            items={"type": "integer"},
        ),
        "variant": field("string", what, "Variant name", "Names a deploy-override variant"),
        "transcript_mode": field(
            "boolean", what, "Transcript mode", "Simulator targets only: no audio (fast)"
        ),
        "targets": field(
            "object",
            where,
            "Target per branch",
            "branch → simulator:PROFILE, or a target the deployment config names (its "
            'series\' targets and form_choices.targets), e.g. {"main": "simulator:main"}',
            additionalProperties=forms.TARGET_SCHEMA,
            examples=[{"main": "simulator:main", "rebase": "simulator:rebase"}],
        ),
        "commits": field(
            "object",
            where,
            "Commit per branch",
            'branch → commit SHA (7–40 hex), e.g. {"rebase": "3f2a9c1"}; default: the head',
            additionalProperties={"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"},
        ),
        "environment": field(
            "object",
            where,
            "vLLM build",
            '{"vllm": BUILD}, one of the config\'s form_choices (environment.vllm); the rest '
            "of the environment is the config's",
            **forms.ENVIRONMENT_SCHEMA,
        ),
        "server": field(
            "object",
            where,
            "Model",
            '{"model": NAME}, one of the config\'s form_choices (server.model); the rest of the '
            "server is the config's",
            **forms.SERVER_SCHEMA,
        ),
        "overrides": field(
            ["object", "string"],
            where,
            "Deploy overrides",
            "The name of one of the config's named_overrides, or "
            '{"stages": [{"stage_id": 0, "enforce_eager": true}]} (eager mode, batching and '
            "sampling keys only)",
            **forms.OVERRIDE_SCHEMA,
        ),
        "grader": field(
            "object",
            how,
            "Grader",
            'e.g. {"backend": "faster-whisper", "harness_version": "0.30.0"} (the model is the '
            "config's)",
            **forms.GRADER_SCHEMA,
        ),
        "prompt_template": field(
            "string",
            how,
            "Prompt template",
            "seed-tts-default (the harness's) or read-aloud",
            examples=["seed-tts-default", "read-aloud"],
        ),
    }


RESULTS_CONN = "omni_results"
SLACK_CONN = "slack_api_default"


def _results_dsn() -> str | None:
    """The results DB through PostgresHook (connection `omni_results`), or None when that
    connection is not defined (then OMNI_DATABASE_URL / the embedded default). A defined but
    unusable connection is an error, never a silent fallback."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook
    from airflow.sdk.exceptions import AirflowNotFoundException
    from psycopg.conninfo import make_conninfo

    try:
        url = PostgresHook(postgres_conn_id=RESULTS_CONN).sqlalchemy_url
    except AirflowNotFoundException:
        return None
    # The hook's SQLAlchemy URL as a libpq DSN (a socket directory as host included).
    fields = {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
        **url.query,
    }
    return make_conninfo(**{k: str(v) for k, v in fields.items() if v is not None})


@contextmanager
def results_db() -> Iterator[psycopg.Connection[Any]]:
    from omni_tasks.store.db import connect
    from omni_tasks.store.migrate import migrate

    conn = connect(_results_dsn())
    try:
        migrate(conn)
        yield conn
    finally:
        conn.close()


def _slack_sink() -> Any:
    """Slack through SlackHook (connection `slack_api_default`: the bot token as its password,
    the channel ID in its extra `channel`), else the env settings, else the local outbox."""
    from airflow.providers.slack.hooks.slack import SlackHook
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    from omni_tasks.alerts.slack import SlackSink, default_sink, retry_handlers
    from omni_tasks.config import get_settings

    hook = SlackHook(slack_conn_id=SLACK_CONN, retry_handlers=retry_handlers())
    try:
        conn = hook.get_connection(SLACK_CONN)
    except AirflowNotFoundException:
        return default_sink()
    channel = (conn.extra_dejson or {}).get("channel") or get_settings().slack_channel
    if not conn.password or not channel:
        raise AirflowFailException(
            f"Airflow connection {SLACK_CONN} needs the bot token as its password and the "
            'channel ID in its extra {"channel": "C…"} (or OMNI_SLACK_CHANNEL)'
        )
    return SlackSink(conn.password, channel, "", client=hook.client)


def _night(context: dict[str, Any]) -> Any:
    """The night's lanes and series (deployment config + trigger form). A config error fails
    the task at once, without retries, naming the field."""
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, ConfigError, resolve_night

    run_type = str(getattr(context["dag_run"], "run_type", "")).lower()
    try:
        return resolve_night(
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


F = TypeVar("F", bound=Callable[..., Any])
_stopped = False  # this process got SIGTERM (one task per process on a worker; all, in dags test)


def _stoppable(runs_after_stop: bool) -> Callable[[F], F]:
    """Tasks that stop when the process gets SIGTERM (a worker shutting down; Ctrl-C's cousin on
    `airflow dags test`). Airflow's own handler only calls the operator's on_kill and lets the
    task run on, which in-process (`dags test`) means to the end of the night; this one calls
    it, ends the task as terminated (a terminal failure: no retry), and every later task of
    the process ends at once — except alert delivery, so what the stop raised still goes out.
    A launched server is stopped by its context manager as the exception unwinds; stored clips
    stay stored, so a re-run resumes."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            import signal

            from airflow.sdk.exceptions import AirflowTaskTerminated

            from omni_tasks.trust.redact import install_log_filter

            install_log_filter()  # the task's log lines pass the redaction gate
            if _stopped and not runs_after_stop:
                raise AirflowTaskTerminated("not started: the process was stopped (SIGTERM)")
            previous = signal.getsignal(signal.SIGTERM)

            def stop(signum: int, frame: Any) -> None:
                global _stopped
                _stopped = True
                if callable(previous):
                    previous(signum, frame)
                raise AirflowTaskTerminated("stopped by SIGTERM")

            signal.signal(signal.SIGTERM, stop)
            try:
                return fn(*args, **kwargs)
            finally:
                signal.signal(signal.SIGTERM, previous)

        return wrapper  # type: ignore[return-value]

    return decorate


stops_on_sigterm = _stoppable(runs_after_stop=False)
delivers_after_sigterm = _stoppable(runs_after_stop=True)


def lanes() -> dict[str, Any]:
    """The lanes the nightly has GPU tasks for (deployment.dag_lanes: read when parsed)."""
    from omni_tasks.deployment import dag_lanes

    return dag_lanes()


def lane_task_id(task: str, lane: str) -> str:
    """A lane's own task (`run_branch__rocm-mi300`); the default lane's keeps the plain id."""
    from omni_tasks.series import DEFAULT_LANE

    return task if lane == DEFAULT_LANE else f"{task}__{lane}"


@stops_on_sigterm
def record_heads(context: dict[str, Any], lane: str, dag_lanes: list[str]) -> list[dict[str, Any]]:
    """The night's series × branch × seed plans of one lane (its GPU task maps over them). A
    series on a lane this DAG has no task for fails every lane here, before any GPU work."""
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.jobs import nightly

    night = _night(context)
    unknown = sorted({p.lane for p in night.series} - set(dag_lanes))
    if unknown:
        raise AirflowFailException(
            f"deployment config: lane {', '.join(unknown)} has no GPU task in this DAG (its "
            f"lanes: {', '.join(dag_lanes)}); lanes are read from OMNI_NIGHTLY_CONFIG when the "
            "DAG file is parsed, so a config given as a Variable uses the file's lanes"
        )
    with results_db() as conn:
        return nightly.record_heads(
            conn,
            [p for p in night.series if p.lane == lane],
            _nightly(context),
            backfill=_is_backfill(context),
        )


@stops_on_sigterm
def run_branch(context: dict[str, Any], plan: dict[str, Any]) -> str:
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.benchmarks.run_seed_tts import BenchError
    from omni_tasks.deployment import ConfigError
    from omni_tasks.jobs import nightly

    context["branch_label"] = plan.get("label") or f"{plan['branch']} seed {plan['seed']}"
    scheduled = str(context["dag_run"].run_type).lower().endswith("scheduled")
    trigger = "backfill" if _is_backfill(context) else ("nightly" if scheduled else "manual")
    try:
        params = _night(context).find(plan["series"], plan["variant"])
    except ConfigError as exc:
        raise AirflowFailException(f"deployment config changed during the night: {exc}") from None
    timeout = deadline(params.gpu_task_timeout_s, f"run_branch {context['branch_label']}")
    with timeout, results_db() as conn:
        try:
            return nightly.run_branch(
                conn,
                params,
                plan,
                trigger=trigger,
                airflow_ids=(context["dag"].dag_id, context["run_id"]),
            )
        except BenchError as exc:  # what was asked cannot run: a retry would fail the same way
            raise AirflowFailException(f"{context['branch_label']}: {exc}") from None


@stops_on_sigterm
def summarize(context: dict[str, Any]) -> list[str]:
    """Statistics of every run the night's series stored (whatever GPU task wrote it, so a
    failed sibling task holds back nothing)."""
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs import nightly

    with results_db() as conn:
        return nightly.summarize_night(
            conn, _night(context).series, _nightly(context), load_policy()
        )


@stops_on_sigterm
def decide(context: dict[str, Any]) -> str:
    """Gate the night, each series against its own baseline, and plan alerts. A series that
    cannot be decided fails this task after every other series is decided (its alerts are
    planned; dispatch_alerts runs whatever failed)."""
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs import nightly

    fleet, night = _night(context), _nightly(context)
    with results_db() as conn:
        out = nightly.decide_fleet(conn, night, load_policy(), fleet.series)
    for decided in out.decided:
        for d in decided.decisions:
            confirmed = " confirmed" if d.confirmed else ""
            log.info(
                "%s · %s · %s: %s vs %s (%s): %s%s",
                d.benchmark,
                d.model,
                d.lane,
                d.candidate,
                d.baseline,
                d.variant,
                d.verdict,
                confirmed,
            )
    if out.failed:
        raise AirflowFailException(
            "not decided: " + "; ".join(f"{k}: {v}" for k, v in out.failed.items())
        )
    return night.isoformat()


@stops_on_sigterm
def plan_bisects(context: dict[str, Any], night: str) -> list[dict[str, Any]]:
    """Auto-bisect: TriggerDagRunOperator arguments for the night's new confirmed regressions."""
    from omni_tasks.jobs.auto_bisect import plan_bisects as plan

    with results_db() as conn:
        triggers = [
            t
            for params in _night(context).series
            for t in plan(conn, params, dt.date.fromisoformat(night))
        ]
    for t in triggers:
        log.info("auto-bisect: %s (%s)", t["trigger_run_id"], t["trigger_dag_id"])
    return triggers


@stops_on_sigterm
def refresh(context: dict[str, Any], night: str) -> dict[str, str]:
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs import nightly

    series = [p.series for p in _night(context).series]
    with results_db() as conn:
        out = nightly.refresh_outputs(
            conn, series, dt.date.fromisoformat(night), load_policy().primary_tau
        )
    log.info("grafana: %s; reports: %s", out["grafana"], ", ".join(out["reports"]))
    return out


@delivers_after_sigterm
def dispatch_alerts(context: dict[str, Any]) -> str:
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.alerts.slack import SlackConfigError, dispatch

    sink = _slack_sink()
    log.info("alerts go to %s", getattr(sink, "channel", None) or f"the local outbox ({sink.name})")
    with results_db() as conn:
        try:
            report = dispatch(conn, sink)
        except SlackConfigError as exc:
            raise AirflowFailException(str(exc)) from None
    log.info("alerts: %s", report.summary)
    return report.summary


def fail_the_run() -> None:
    """A DAG's watcher: runs only when a task failed, and fails the DAG run with it (the
    always-run `dispatch_alerts` leaf would otherwise mark the run successful)."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException("a task of this run failed (its log says why); alerts sent")


def on_task_failure(context: dict[str, Any]) -> None:
    """Failure callback: an INFRA alert through the outbox (delivered by the next dispatch)."""
    from omni_tasks.config import get_settings
    from omni_tasks.jobs import nightly

    ti = context["ti"]
    error = str(context.get("exception") or "unknown error")
    try:
        with results_db() as conn:
            nightly.task_failed(
                conn,
                get_settings().benchmark,
                ti.dag_id,
                ti.task_id,
                context["run_id"],
                ti.try_number,
                error,
                map_index=-1 if getattr(ti, "map_index", None) is None else int(ti.map_index),
            )
    except Exception:  # a callback must never raise; the failure is in Airflow's log anyway
        log.exception("could not record the failure of %s as an INFRA alert", ti.task_id)


def _serving_params() -> dict[str, Any]:
    """The serving choices a one-series form (bisect, ablate) may make; the rest is the
    configured series' (docs/operators/security.md)."""
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    return {
        "grader": Param({}, type="object", description="Grader choices", **forms.GRADER_SCHEMA),
        "environment": Param(
            {},
            type="object",
            description="{vllm: BUILD} among the config's form_choices",
            **forms.ENVIRONMENT_SCHEMA,
        ),
        "server": Param(
            {},
            type="object",
            description="{model: NAME} among the config's form_choices",
            **forms.SERVER_SCHEMA,
        ),
        "overrides": Param(
            {},
            type=["object", "string"],
            description="A named override of the config, or eager/batching/sampling keys",
            **forms.OVERRIDE_SCHEMA,
        ),
    }


def one_of(values: Any) -> str:
    """A JSON-schema pattern that takes exactly these strings."""
    return "^(" + "|".join(re.escape(str(v)) for v in values) + ")$"


def one_series_fields(capability: str, what: str, where: str) -> dict[str, Any]:
    """The fields a bisect's and an ablation's forms share: which series (only benchmarks
    whose family has `capability`: any other is refused at submit), its branches, and where
    it runs (empty target and dataset: the configured series', deployment.one_series_form)."""
    from airflow.sdk import Param

    from omni_tasks import benchmarks

    able = [b.id for b in benchmarks.all_benchmarks() if capability in b.capabilities]
    return {
        "benchmark": Param(
            None,
            type=["null", "string"],
            title="Benchmark",
            section=what,
            examples=able,
            pattern=one_of(able),
            description=f"A benchmark whose family has the {capability} capability "
            "(`omni-tasks benchmarks list`)",
        ),
        "lane": Param(
            "default", type="string", title="Lane", section=what, description="Hardware lane"
        ),
        "branch": Param("rebase", type="string", title="Candidate branch", section=what),
        "baseline": Param("main", type="string", title="Baseline branch", section=what),
        "variant": Param("default", type="string", title="Variant", section=what),
        "dataset": Param(
            None,
            type=["null", "string"],
            title="Dataset",
            section=where,
            description="Empty: the series' configured dataset",
        ),
        "transcript_mode": Param(
            False, type="boolean", title="Transcript mode", section=where, description="Simulator"
        ),
    }


def _target(title: str, section: str) -> Any:
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    return Param(
        None,
        title=title,
        section=section,
        description="Empty: the config's target for that branch. Else vllm-serve, a target the "
        "config names, or simulator:PROFILE",
        **{**forms.TARGET_SCHEMA, "type": ["null", "string"]},
    )


def _alert(section: str) -> Any:
    from airflow.sdk import Param

    return Param(
        None,
        type=["null", "integer"],
        title="Alert",
        section=section,
        description="The alert whose Slack thread gets the result",
    )


def bisect_params() -> dict[str, Any]:
    """The bisect form, in sections. Its target and dataset default to the deployment
    config's for the series and branch; the simulator is only what the demo names."""
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    what, where, how = "What to bisect", "Where it runs", "How hard to look"
    return {
        "history": Param(
            [],
            type="array",
            maxItems=forms.MAX_LIST,
            items={"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"},
            title="Commits",
            section=what,
            description="Oldest (good) to newest (bad); the alert's range when it came from one",
        ),
        **one_series_fields("bisect", what, where),
        "axis": Param(
            "vllm-omni",
            type="string",
            enum=["vllm-omni", "vllm"],
            title="Repository bisected",
            section=what,
            description="vllm-omni commits, or vLLM commits with vllm-omni at omni_commit",
        ),
        "omni_commit": Param(
            None,
            type=["null", "string"],
            title="vllm-omni commit held",
            section=what,
            description="axis vllm only",
        ),
        "target": _target("Target", where),
        "first_bad": Param(
            None,
            type=["null", "string"],
            title="Planted first bad commit",
            section=where,
            description="simulator:commit-history only",
        ),
        "limit": Param(None, type=["null", "integer"], title="Only the first N items", section=how),
        "seed": Param(
            1000, type="integer", minimum=0, maximum=2**31 - 1, title="Seed", section=how
        ),
        "alpha": Param(
            0.05, type="number", exclusiveMinimum=0, maximum=0.5, title="α", section=how
        ),
        "budget": Param(
            4.0,
            type="number",
            exclusiveMinimum=0,
            maximum=100,
            title="GPU budget",
            section=how,
            description="In full-run equivalents (clips run / clips)",
        ),
        **_serving_params(),
        "alert_id": _alert("Afterwards"),
    }


@stops_on_sigterm
def bisect(context: dict[str, Any]) -> dict[str, Any]:
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, one_series_form
    from omni_tasks.jobs.bisect import BisectParams, run_bisect, summary

    variable = Variable.get(VARIABLE, default=None)
    try:
        p = BisectParams(**one_series_form("bisect", dict(context["params"]), variable))
    except ValueError as exc:  # a bad form is not retried (ConfigError is a ValueError)
        raise AirflowFailException(f"bisect parameters: {exc}") from None
    with results_db() as conn:
        result = run_bisect(conn, p, _nightly(context))
    log.info("%s", summary(p, result))
    return {
        "first_bad": result.first_bad,
        "last_good": result.last_good,
        "steps": len(result.steps),
        "evaluations": result.evaluations,
        "full_runs": round(result.full_runs, 3),
    }


def ablate_params() -> dict[str, Any]:
    """The ablation form, in sections. Its targets and dataset default to the deployment
    config's for the series' candidate and baseline branches."""
    from airflow.sdk import Param

    what, where, how = "Which night", "Where it runs", "What to try"
    return {
        "nightly": Param(
            "", type="string", title="Night", section=what, description="The confirmed night"
        ),
        **one_series_fields("ablate", what, where),
        "candidate_target": _target("Candidate target", where),
        "baseline_target": _target("Baseline target", where),
        "ablations": Param(
            None,
            type=["null", "array"],
            maxItems=16,
            title="Ablations",
            section=how,
            description="Names of the config's named_overrides, or [{name, overrides, why}] "
            "with eager/batching/sampling keys (empty: the shipped four)",
        ),
        "seed": Param(
            3000, type="integer", minimum=0, maximum=2**31 - 1, title="Seed", section=how
        ),
        "control": Param(
            25, type="integer", minimum=0, maximum=10_000, title="Control clips", section=how
        ),
        **_serving_params(),
        "alert_id": _alert("Afterwards"),
    }


@stops_on_sigterm
def ablate(context: dict[str, Any]) -> dict[str, Any]:
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, one_series_form
    from omni_tasks.jobs.ablate import AblateError, AblateParams, run_ablations, summary

    variable = Variable.get(VARIABLE, default=None)
    try:
        p = AblateParams(**one_series_form("ablate", dict(context["params"]), variable))
    except ValueError as exc:  # a bad form is not retried (ConfigError is a ValueError)
        raise AirflowFailException(f"ablate parameters: {exc}") from None
    with results_db() as conn:
        try:
            result = run_ablations(conn, p, _nightly(context))
        except AblateError as exc:
            raise AirflowFailException(str(exc)) from None
    log.info("%s", summary(p, result))
    return {
        "ablate_id": p.ablate_id,
        "verdicts": {v.name: v.verdict for v in result.verdicts},
        "full_runs": round(result.full_runs, 3),
    }


def regrade_params() -> dict[str, Any]:
    from airflow.sdk import Param

    from omni_tasks.grading.asr import BACKENDS
    from omni_tasks.grading.windows import HARNESS_WINDOW, WINDOWS

    return {
        "run_key": Param("", type="string", description="Run whose stored audio to grade"),
        "backend": Param("faster-whisper", type="string", enum=list(BACKENDS)),
        "precision": Param(None, type=["null", "string"], maxLength=20),
        # Proposals, not a select showing `null`; the pattern is the allow-list.
        "window": Param(
            None,
            type=["null", "string"],
            examples=list(WINDOWS),
            pattern=one_of(WINDOWS),
            description="Empty: the harness version's window policy, else truncate30",
        ),
        "harness_version": Param(
            None,
            type=["null", "string"],
            examples=list(HARNESS_WINDOW),
            pattern=one_of(HARNESS_WINDOW),
            description="The vllm-omni reference harness the re-grade must match",
        ),
        "device": Param("cpu", type="string", pattern=r"^(cpu|cuda|npu)(:[0-9]{1,2})?$"),
        "batch_size": Param(8, type="integer", minimum=1, maximum=64),
    }


@stops_on_sigterm
def regrade(context: dict[str, Any]) -> dict[str, Any]:
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.jobs.regrade import RegradeFormError
    from omni_tasks.jobs.regrade import regrade as run

    with results_db() as conn:
        try:
            out = run(conn, context["params"])  # checks the form first
        except RegradeFormError as exc:  # a bad form is not retried
            raise AirflowFailException(str(exc)) from None
    return {"grading_id": out.grading_id, "grader_id": out.grader_id, "created": out.created}


@stops_on_sigterm
def check_freshness(context: dict[str, Any]) -> list[str]:
    """Every series of the deployment config, every one of its branches (a scheduled check:
    the config is required)."""
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, ConfigError, resolve_night
    from omni_tasks.jobs.freshness import check_decided
    from omni_tasks.jobs.freshness import check_freshness as check

    try:
        fleet = resolve_night({}, Variable.get(VARIABLE, default=None), scheduled=True)
    except ConfigError as exc:
        raise AirflowFailException(f"deployment config: {exc}") from None
    night = _nightly(context)
    with results_db() as conn:
        missing = [
            f"{p.series.label} {branch}"
            for p in fleet.series
            for branch in check(conn, p.series, p.branches, night)
        ]
        missing += [
            f"{p.series.label} decision"
            for p in fleet.series
            if len(p.branches) > 1 and not check_decided(conn, p.series, p.variant, night)
        ]
    if missing:
        log.warning("no results for %s on %s: INFRA alert queued", ", ".join(missing), night)
    return missing


def watch_upstream(context: dict[str, Any]) -> list[str]:
    """vllm-omni releases newer than the harness table (an INFRA alert per week that has any;
    the conformance suite runs against the newest where a checkout is configured)."""
    from omni_tasks.config import get_settings
    from omni_tasks.jobs.upstream_watch import watch

    settings = get_settings()
    year, week, _ = _nightly(context).isocalendar()
    with results_db() as conn:
        found = watch(conn, settings.pypi_url, settings.conformance_checkout, f"{year}-W{week:02d}")
    log.info("vllm-omni releases the harness table lacks: %s", ", ".join(found) or "none")
    return found


def ab_params() -> dict[str, Any]:
    from airflow.sdk import Param

    return {
        "repo": Param("", type="string", description="OWNER/NAME (one of the config's ab.repos)"),
        "pr": Param(None, type=["null", "integer"], minimum=1),
        "base_sha": Param("", type="string", pattern="^[0-9a-f]{40}$"),
        "head_sha": Param("", type="string", pattern="^[0-9a-f]{40}$"),
        "series": Param(
            None,
            type=["null", "string"],
            description="BENCHMARK|MODEL|LANE of a config series (default: ab.series)",
        ),
        "budget": Param(None, type=["null", "integer"], minimum=1),
    }


@stops_on_sigterm
def ab(context: dict[str, Any]) -> dict[str, Any]:
    """Run the A/B the form asks for (checked against the config's `ab:`), report it as a
    check run on the head commit; a config or form error fails at once, without retries."""
    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.deployment import VARIABLE, ConfigError, resolve_ab
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.ab import run_ab

    form = {k: v for k, v in dict(context["params"]).items() if v not in (None, "")}
    try:
        req = resolve_ab(form, Variable.get(VARIABLE, default=None))
    except ConfigError as exc:
        raise AirflowFailException(f"A/B request: {exc}") from None
    with results_db() as conn:
        result = run_ab(conn, req, load_policy())
    dispatch_alerts(context)  # its one Slack message (the outbox when Slack is not set up)
    return {
        "verdict": result.verdict,
        "clips_spent": result.clips_spent,
        "stopped": result.stopped,
        "check_run_id": result.check_run_id,
    }


BUILDKITE_CONN = "buildkite_default"  # its password is the API token


@stops_on_sigterm
def buildkite_sync(context: dict[str, Any]) -> dict[str, Any]:
    """Import the configured pipelines' builds of the run's window (plus the config's
    lookback, so a build that finished late is still seen); idempotent, so hourly runs and
    backfills never import an artifact twice."""
    import os

    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    from omni_tasks.deployment import VARIABLE, ConfigError
    from omni_tasks.deployment import buildkite_sync as sync_config
    from omni_tasks.importers.buildkite import (
        BuildkiteError,
        BuildkiteSource,
        import_pipeline,
        load_rules,
    )

    try:
        cfg = sync_config(Variable.get(VARIABLE, default=None))
    except ConfigError as exc:
        raise AirflowFailException(f"deployment config: {exc}") from None
    token = os.environ.get("BUILDKITE_API_TOKEN")
    try:
        from airflow.sdk import BaseHook

        token = BaseHook.get_connection(BUILDKITE_CONN).password or token
    except AirflowNotFoundException:
        pass
    if not token:
        raise AirflowFailException(
            f"no Buildkite token: the connection {BUILDKITE_CONN}'s password or BUILDKITE_API_TOKEN"
        )
    since = _nightly(context) - dt.timedelta(days=cfg.lookback_days)
    out: dict[str, Any] = {}
    with results_db() as conn:
        try:
            rules = tuple(load_rules(Path(cfg.rules))) if cfg.rules else ()  # the operator's
            for pipeline in cfg.pipelines:
                report = import_pipeline(
                    conn,
                    BuildkiteSource(
                        cfg.org,
                        pipeline,
                        token,
                        cfg.base_url,
                        since=since,
                        rules=rules,
                        upstream_checkout=Path(cfg.upstream_checkout)
                        if cfg.upstream_checkout
                        else None,
                        artifact_hosts=tuple(cfg.artifact_hosts),
                        download_deadline_s=cfg.download_deadline_s,
                    ),
                )
                out[pipeline] = {
                    "imported": len(report.imported),
                    "retries": len(report.retries),
                    "skipped": report.skipped,
                    "skipped_builds": report.skipped_builds,
                    "refused": report.refused,
                    "unknown": report.unknown,
                    "invalid": report.invalid,
                    "errors": report.errors,
                }
                log.info("buildkite %s: %s", pipeline, out[pipeline])
        except BuildkiteError as exc:
            raise AirflowFailException(str(exc)) from None
    return out
