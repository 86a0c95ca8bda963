"""One small function per DAG task: each reads the run's context and calls one omni_tasks job
(product imports inside, so a DAG file parses light)."""

from __future__ import annotations

import datetime as dt
import logging
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from omni_tasks.config import read_secret
from omni_tasks.dag_support.runtime import (
    BUILDKITE_CONN,
    config_variable,
    deadline,
    delivers_after_sigterm,
    fails_at_once,
    is_backfill,
    night_of,
    nightly_of,
    results_db,
    slack_sink,
    stops_on_sigterm,
)

if TYPE_CHECKING:
    from airflow.sdk import Context
    from pydantic import BaseModel

    from omni_tasks.contracts import JsonObject

log = logging.getLogger(__name__)
Params = TypeVar("Params", bound="BaseModel")


@stops_on_sigterm
def record_heads(
    context: Context, unit: str | None, dag_units: list[str | None]
) -> list[JsonObject]:
    """One series' branch × seed plans for the night (its GPU task maps over them); `unit` is
    its Series.key (None: a version 1 config's one series). A series the DAG has no task chain
    for fails here, before any GPU work."""
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.jobs import nightly

    night = night_of(context)
    if None not in dag_units:
        unknown = sorted({p.series.label for p in night.series if p.series.key not in dag_units})
        if unknown:
            raise AirflowFailException(
                f"deployment config: series {', '.join(unknown)} has no task chain in this DAG; "
                "series are read from OMNI_NIGHTLY_CONFIG when the DAG file is parsed, so a "
                "config given as a Variable uses the file's series"
            )
    with results_db() as conn:
        plans = nightly.record_heads(
            conn, unit_series(night, unit), nightly_of(context), backfill=is_backfill(context)
        )
    return [p.to_json() for p in plans]


def unit_series(night: Any, unit: str | None) -> list[Any]:
    """The night's NightlyParams of one unit (every variant of its series)."""
    return [p for p in night.series if unit is None or p.series.key == unit]


@stops_on_sigterm
def run_branch(context: Context, plan: JsonObject) -> str:
    from omni_tasks.benchmarks.request import BenchError
    from omni_tasks.contracts import BranchPlan
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.jobs import nightly

    branch = BranchPlan.from_json(plan)
    label = branch.label or f"{branch.branch} seed {branch.seed}"
    # The mapped task's name in the UI: map_index_template reads it from the context.
    cast("dict[str, Any]", context)["branch_label"] = label
    scheduled = str(context["dag_run"].run_type).lower().endswith("scheduled")
    trigger = "backfill" if is_backfill(context) else ("nightly" if scheduled else "manual")
    with fails_at_once(ConfigError, what="deployment config changed during the night"):
        params = night_of(context).find(branch.series, branch.variant)
    timeout = deadline(params.gpu_task_timeout_s, f"run_branch {label}")
    # BenchError: what was asked cannot run.
    with timeout, results_db() as conn, fails_at_once(BenchError, what=label):
        return nightly.run_branch(
            conn,
            params,
            branch,
            trigger=trigger,
            airflow_ids=(context["dag"].dag_id, context["run_id"]),
            show_progress=True,  # off a terminal: a progress line per 100 items or minute
        )


@stops_on_sigterm
def check_concurrency(context: Context, unit: str | None) -> list[str]:
    """One series' concurrency check (its config's `concurrency` levels), on its lane's GPU
    queue beside its decision, never on its alert's path."""
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.concurrency import nightly_concurrency

    series = unit_series(night_of(context), unit)
    with results_db() as conn:
        lines = nightly_concurrency(
            conn, series, nightly_of(context), load_policy(), airflow_run=context["run_id"]
        )
    for line in lines:
        log.info("concurrency: %s", line)
    return lines


@stops_on_sigterm
def summarize(context: Context, unit: str | None) -> list[str]:
    """Statistics of every run one series stored that night (whatever GPU task wrote it, so a
    failed run of the series holds back nothing)."""
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs import nightly

    series = unit_series(night_of(context), unit)
    with results_db() as conn:
        return nightly.summarize_night(conn, series, nightly_of(context), load_policy())


@stops_on_sigterm
def decide(context: Context, unit: str | None) -> str:
    """Gate one series' night against its own baseline and plan its alerts (every variant:
    one that cannot be decided fails this task after the others are decided)."""
    from airflow.sdk.exceptions import AirflowFailException

    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.decide import decide_fleet

    fleet, night = night_of(context), nightly_of(context)
    with results_db() as conn:
        out = decide_fleet(conn, night, load_policy(), unit_series(fleet, unit))
    for decided in out.decided:
        for d in decided.decisions:
            confirmed = " confirmed" if d.confirmed else ""
            log.info(
                "%s · %s · %s: %s vs %s (%s): %s%s",
                d.benchmark,
                d.model,
                d.lane,
                d.candidate_branch,
                d.baseline_branch,
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
def rerun(context: Context, unit: str | None) -> list[str]:
    """One series' same-morning confirmation after its decision: its REGRESSED, unconfirmed
    decisions' discordant items re-run on both branches, then the night decided again
    (jobs/rerun.py); skipped at once when the night has none."""
    from airflow.sdk.exceptions import AirflowSkipException

    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.rerun import rerun_series

    series = unit_series(night_of(context), unit)
    with results_db() as conn:
        lines = rerun_series(
            conn,
            series,
            nightly_of(context),
            load_policy(),
            airflow_ids=(context["dag"].dag_id, context["run_id"]),
        )
    for line in lines:
        log.info("same-morning re-run: %s", line)
    if not lines:
        raise AirflowSkipException("no REGRESSED, unconfirmed decision to re-run tonight")
    return lines


@stops_on_sigterm
def advise_gates(context: Context) -> None:
    """What each series' upstream gate does with nothing changed (for the report and the
    panel), after the night is decided: never on the alerts' path, over a bounded window. Advice
    is no verdict: a series whose advice fails is logged and has none that night, and the
    reports still refresh."""
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.gate_advice import advise_fleet

    with results_db() as conn:
        failed = advise_fleet(conn, nightly_of(context), load_policy(), night_of(context).series)
    for series, error in failed.items():
        log.error("no gate advice for %s tonight: %s", series, error)


@stops_on_sigterm
def plan_bisects(context: Context) -> list[JsonObject]:
    """Auto-bisect: TriggerDagRunOperator arguments for the night's new confirmed regressions
    (of every series that was decided)."""
    from omni_tasks.jobs.auto_bisect import plan_bisects as plan

    night = nightly_of(context)
    with results_db() as conn:
        triggers = [t for params in night_of(context).series for t in plan(conn, params, night)]
    for t in triggers:
        log.info("auto-bisect: %s (%s)", t["trigger_run_id"], t["trigger_dag_id"])
    return triggers


@stops_on_sigterm
def refresh(context: Context) -> JsonObject:
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs import nightly

    series = [p.series for p in night_of(context).series]
    with results_db() as conn:
        out = nightly.refresh_outputs(conn, series, nightly_of(context), load_policy().primary_tau)
    log.info("grafana: %s; reports: %s", out.grafana, ", ".join(out.reports))
    # The task's "Nightly report" link (plugins/omni_links.py) reads `report`: the first one.
    first = out.reports[0] if out.reports else ""
    return {"grafana": out.grafana, "reports": list(out.reports), "report": first}


@delivers_after_sigterm
def dispatch_alerts(context: Context, *, last: bool = False) -> str:
    """Deliver the outbox; `last` (the night's final delivery) also waits out the alert
    groups' triage delay and delivers what it held."""
    from omni_tasks.alerts.slack import SlackConfigError, dispatch, dispatch_all

    sink = slack_sink()
    log.info("alerts go to %s", getattr(sink, "channel", None) or f"the local outbox ({sink.name})")
    with results_db() as conn, fails_at_once(SlackConfigError):
        report = (dispatch_all if last else dispatch)(conn, sink)
    log.info("alerts: %s", report.summary)
    return report.summary


@delivers_after_sigterm
def deliver(context: Context, unit: str | None) -> bool:
    """One series' delivery, a sensor's poke (rescheduled, holding no worker slot, until it
    returns True): the outbox goes out, and the series is done once none of its opening
    posts is held by the triage delay, so a held alert goes out when its own hold ends and
    never waits for another lane's retries."""
    from omni_tasks.alerts.slack import SlackConfigError, deliver_series
    from omni_tasks.series import Series

    with results_db() as conn, fails_at_once(SlackConfigError):
        report, done = deliver_series(conn, slack_sink(), Series.parse(unit) if unit else None)
    log.info("alerts: %s", report.summary)
    return done


def _one_series_params(job: str, params: type[Params], context: Context) -> Params:
    """The trigger form of a one-series job (`bisect`, `ablate`) over the deployment config,
    validated as its parameters; a bad form fails the task without retries."""
    from omni_tasks.deployment.one_series import one_series_form

    with fails_at_once(ValueError, what=f"{job} parameters"):  # ConfigError is a ValueError
        form = one_series_form(job, dict(context["params"]), config_variable())
        return params.model_validate(form)


@stops_on_sigterm
def bisect(context: Context) -> JsonObject:
    from omni_tasks.jobs.bisect import BisectParams, run_bisect, summary

    p = _one_series_params("bisect", BisectParams, context)
    with results_db() as conn:
        result = run_bisect(conn, p, nightly_of(context))
    log.info("%s", summary(p, result))
    return {
        "first_bad": result.first_bad,
        "last_good": result.last_good,
        "steps": len(result.steps),
        "evaluations": result.evaluations,
        "full_runs": round(result.full_runs, 3),
    }


@stops_on_sigterm
def ablate(context: Context) -> JsonObject:
    from omni_tasks.jobs.ablate import AblateError, AblateParams, run_ablations, summary

    p = _one_series_params("ablate", AblateParams, context)
    with results_db() as conn, fails_at_once(AblateError):
        result = run_ablations(conn, p, nightly_of(context))
    log.info("%s", summary(p, result))
    return {
        "ablate_id": p.ablate_id,
        "verdicts": {v.name: v.verdict for v in result.verdicts},
        "seeds": len(result.ablated.seeds),
        "full_runs": round(result.full_runs, 3),
    }


@stops_on_sigterm
def regrade(context: Context) -> JsonObject:
    from omni_tasks.jobs.regrade import RegradeFormError
    from omni_tasks.jobs.regrade import regrade as run
    from omni_tasks.store.runs import RunNotFoundError

    with results_db() as conn, fails_at_once(RegradeFormError, RunNotFoundError):
        # It checks the form first; empty fields are the config's grader for the run.
        out = run(conn, context["params"], config_variable())
    return {"grading_id": out.grading_id, "grader_id": out.grader_id, "created": out.created}


@stops_on_sigterm
def check_freshness(context: Context) -> list[str]:
    """Every series of the deployment config, every one of its branches (a scheduled check:
    the config is required)."""
    from omni_tasks.deployment.night import resolve_night
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.jobs.freshness import check_decided
    from omni_tasks.jobs.freshness import check_freshness as check

    with fails_at_once(ConfigError, what="deployment config"):
        fleet = resolve_night({}, config_variable(), scheduled=True)
    night = nightly_of(context)
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


def _iso_week(context: Context) -> str:
    """The run's ISO week (`2026-W45`): a weekly task's idempotency key."""
    year, week, _ = nightly_of(context).isocalendar()
    return f"{year}-W{week:02d}"


def watch_upstream(context: Context) -> list[str]:
    """vllm-omni releases newer than the harness table (an INFRA alert per week that has any;
    the conformance suite runs against the newest where a checkout is configured)."""
    from omni_tasks.config import get_settings
    from omni_tasks.jobs.upstream_watch import watch

    settings = get_settings()
    with results_db() as conn:
        found = watch(conn, settings.pypi_url, settings.conformance_checkout, _iso_week(context))
    log.info("vllm-omni releases the harness table lacks: %s", ", ".join(found) or "none")
    return found


def ledger_digest(context: Context) -> list[str]:
    """The weekly standing-failures digest of each series the config's `ledger_digest:` opts
    in (none listed: nothing queued)."""
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.deployment.sections import ledger_digest as configured
    from omni_tasks.jobs.ledger_digest import send_digests

    with fails_at_once(ConfigError, what="deployment config"):
        wanted = configured(config_variable())
    with results_db() as conn:
        lines = send_digests(
            conn, wanted.opted_in(), wanted.branch, wanted.nights, _iso_week(context)
        )
    log.info("standing-failures digests: %s", "; ".join(lines) or "no series opted in")
    return lines


@stops_on_sigterm
def ab(context: Context) -> JsonObject:
    """Run the A/B the form asks for (checked against the config's `ab:`), report it as a
    check run on the head commit; a config or form error fails at once, without retries."""
    from omni_tasks.ab.config import resolve_ab
    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.ab import run_ab

    form = {k: v for k, v in dict(context["params"]).items() if v not in (None, "")}
    with fails_at_once(ConfigError, what="A/B request"):
        req = resolve_ab(form, config_variable())
    with results_db() as conn:
        result = run_ab(conn, req, load_policy())
    dispatch_alerts(context)  # its one Slack message (the outbox when Slack is not set up)
    return {
        "verdict": result.verdict,
        "clips_spent": result.clips_spent,
        "stopped": result.stopped,
        "check_run_id": result.check_run_id,
    }


@stops_on_sigterm
def buildkite_sync(context: Context) -> JsonObject:
    """Import the configured pipelines' builds of the run's window (plus the config's
    lookback, so a build that finished late is still seen); idempotent, so hourly runs and
    backfills never import an artifact twice."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    from omni_tasks.deployment.reading import ConfigError
    from omni_tasks.deployment.sections import buildkite_sync as sync_config
    from omni_tasks.importers.buildkite import (
        BuildkiteError,
        BuildkiteSource,
        import_pipeline,
    )
    from omni_tasks.importers.identity import RULES, load_rules, pipeline_slugs

    with fails_at_once(ConfigError, what="deployment config"):
        cfg = sync_config(config_variable())
    token = read_secret("BUILDKITE_API_TOKEN")
    with suppress(AirflowNotFoundException):
        token = BaseHook.get_connection(BUILDKITE_CONN).password or token
    if not token:
        raise AirflowFailException(
            f"no Buildkite token: the connection {BUILDKITE_CONN}'s password or BUILDKITE_API_TOKEN"
        )
    since = nightly_of(context) - dt.timedelta(days=cfg.lookback_days)
    out: JsonObject = {}
    with results_db() as conn, fails_at_once(BuildkiteError):
        path = Path(cfg.rules) if cfg.rules else RULES  # the operator's, else the shipped
        rules, roles = tuple(load_rules(path, cfg.slugs)), pipeline_slugs(path, cfg.slugs)
        for pipeline in (roles.get(p, p) for p in cfg.pipelines):
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
                "skipped_builds": [*report.skipped_builds],
                "refused": [*report.refused],
                "unknown": [*report.unknown],
                "invalid": [*report.invalid],
                "errors": [*report.errors],
            }
            log.info("buildkite %s: %s", pipeline, out[pipeline])
    return out
