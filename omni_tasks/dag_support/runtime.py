"""What every DAG task runs inside: default args and timeouts, the GPU pool, the results DB
and Slack (Airflow connections when defined, else the environment), the night a run is for,
deadlines and SIGTERM handling, the lanes of the deployment config.

Nothing here touches the DB, the network or Airflow connections at import (DAG files are parsed
often); each task opens what it needs when it runs. The results DB comes through PostgresHook
(connection `omni_results`) when defined, else from OMNI_DATABASE_URL / the embedded default;
Slack through SlackHook (`slack_api_default`) when defined, else from env, else the local
outbox. A defined but broken connection fails the task; it never falls back.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    import psycopg
    from airflow.sdk import Context


_stopped = False  # this process got SIGTERM (one task per process on a worker; all, in dags test)


# Every task has an execution_timeout: a CPU task (stats, gate, reports, delivery) 2 h; a GPU
# task of the nightly its lane's `execution_timeout_s` (deployment config); a bisection,
# ablation or A/B (many runs in one task) a day; a re-grade 6 h.
DEFAULT_ARGS: dict[str, Any] = {
    "owner": "omni-tasks",
    "retries": 2,
    # retry_delay: Airflow's [core] default_task_retry_delay (300 s unless the deployment says).
    "retry_exponential_backoff": True,
    "execution_timeout": dt.timedelta(hours=2),
}
LONG_TASK_TIMEOUT = dt.timedelta(hours=24)
# How often a series' delivery looks whether its held alert is due: a held alert goes out
# within this (and a task start) of its hold's end.
HOLD_POKE_S = 30
REGRADE_TIMEOUT = dt.timedelta(hours=6)

GPU_POOL = "gpu"
GPU_SLOTS_PER_SERVER = 2  # thinker on one GPU; talker, code2wav and Whisper on the other

RESULTS_CONN = "omni_results"
SLACK_CONN = "slack_api_default"
BUILDKITE_CONN = "buildkite_default"  # its password is the API token


def results_dsn() -> str | None:
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

    conn = connect(results_dsn())
    try:
        migrate(conn)
        yield conn
    finally:
        conn.close()


def slack_sink() -> Any:
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


def config_variable() -> str | None:
    """The deployment config as the Airflow Variable gives it (None: OMNI_NIGHTLY_CONFIG)."""
    from airflow.sdk import Variable

    from omni_tasks.deployment.reading import VARIABLE

    return cast("str | None", Variable.get(VARIABLE, default=None))


@contextmanager
def fails_at_once(*errors: type[Exception], what: str = "") -> Iterator[None]:
    """`errors` fail the task without retries (a bad form or config, what cannot run: a
    retry would fail the same way), their message prefixed with `what`."""
    from airflow.sdk.exceptions import AirflowFailException

    try:
        yield
    except errors as exc:
        raise AirflowFailException(f"{what}: {exc}" if what else str(exc)) from None


def night_of(context: Context) -> Any:
    """The night's lanes and series (deployment config + trigger form). A config error fails
    the task at once, without retries, naming the field."""
    from omni_tasks.deployment.night import resolve_night
    from omni_tasks.deployment.reading import ConfigError

    run_type = str(getattr(context["dag_run"], "run_type", "")).lower()
    with fails_at_once(ConfigError, what="deployment config"):
        return resolve_night(
            dict(context["params"]),
            config_variable(),
            scheduled=run_type.endswith(("scheduled", "backfill")),
        )


def nightly_of(context: Context) -> dt.date:
    when = context.get("logical_date") or context["dag_run"].run_after
    return when.astimezone(dt.UTC).date()


def is_backfill(context: Context) -> bool:
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
