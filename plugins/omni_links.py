"""Airflow plugin: links from a task to its Grafana dashboard and the night's HTML report,
macros with the same URLs for templates, the evidence app (reports and clip audio over HTTP,
under /omni on the API server, authenticated by Airflow's own token check), GitHub's PR
webhook and the Slack buttons' endpoint (each checks its sender's signature), and the submit
check: a trigger form of our DAGs posted to the REST API (the UI's trigger included) is refused
there, naming its field, when the DAG's first task would refuse it
(omni_tasks.dag_support.submit)."""

from __future__ import annotations

import os

from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperatorLink


def grafana_url(benchmark: str | None = None) -> str:
    """The trend dashboard of `benchmark`, else of the default benchmark (OMNI_BENCHMARK)."""
    from omni_tasks.config import get_settings
    from omni_tasks.evidence.links import dashboard_path

    # The browser's Grafana: the public URL when the API server reaches another one.
    base = os.environ.get("OMNI_GRAFANA_PUBLIC_URL") or os.environ.get(
        "OMNI_GRAFANA_URL", "http://localhost:3000"
    )
    base = base.rstrip("/")
    benchmark = benchmark or get_settings().benchmark
    return f"{base}{dashboard_path([('var-benchmark', benchmark)])}"


def report_url(nightly: str, benchmark: str | None = None) -> str:
    """The night's report as the evidence app serves it ("" without OMNI_PUBLIC_URL)."""
    from omni_tasks.config import get_settings
    from omni_tasks.evidence.links import report_url as served

    return served(benchmark or get_settings().benchmark, nightly) or ""


def _ours(ti_key) -> bool:  # type: ignore[no-untyped-def]
    """Links are global to the API server; they point somewhere only on this project's DAGs."""
    from omni_tasks.evidence.links import DAG_IDS

    return getattr(ti_key, "dag_id", None) in DAG_IDS


class GrafanaLink(BaseOperatorLink):
    name = "Grafana trend"

    def get_link(self, operator, *, ti_key) -> str:  # type: ignore[no-untyped-def]
        return grafana_url() if _ours(ti_key) else ""


class ReportLink(BaseOperatorLink):
    """The report the run's `refresh` task wrote (its XCom says where), as the evidence app
    serves it: never a date guessed from the run id, never a file:// URL."""

    name = "Nightly report"

    def get_link(self, operator, *, ti_key) -> str:  # type: ignore[no-untyped-def]
        if not _ours(ti_key):
            return ""
        # Links are built in the API server, which reads XComs from the metadata DB (the task
        # SDK's XCom needs a running task's supervisor).
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session

        from omni_tasks.evidence.links import served_report

        query = XComModel.get_many(
            run_id=ti_key.run_id,
            key="return_value",
            task_ids="refresh",
            dag_ids=ti_key.dag_id,
            limit=1,
        )
        with create_session() as session:
            row = session.scalars(query).first()
            written = None if row is None else XComModel.deserialize_value(row)
        if not isinstance(written, dict) or not written.get("report"):
            return ""
        return served_report(str(written["report"])) or ""


class OmniLinksPlugin(AirflowPlugin):
    name = "omni_links"
    global_operator_extra_links = [GrafanaLink(), ReportLink()]  # noqa: RUF012 (the plugin API)
    macros = [grafana_url, report_url]  # noqa: RUF012 (the plugin API)

    # The apps and the middleware are built where Airflow reads them, the API server. Built
    # at import they cost every process that loads plugins (a task on a worker, the CLI, the
    # scheduler) 2.3 s of imports: a quarter of an `airflow dags test`.
    @property
    def fastapi_apps(self) -> list[dict[str, object]]:  # type: ignore[override]
        from omni_tasks.ab.webhook import (
            airflow_allow_forks,
            airflow_secret,
            airflow_trigger,
            webhook_app,
        )
        from omni_tasks.alerts.interactions import db_apply, interactions_app, settings_secret
        from omni_tasks.evidence.serving import evidence_app

        evidence = evidence_app()
        # GitHub's PR webhook: its own HMAC check, not Airflow's token (GitHub has none).
        webhook = webhook_app(airflow_secret, airflow_trigger, airflow_allow_forks)
        # Slack's buttons: its own signature check (Slack holds no Airflow token).
        slack = interactions_app(settings_secret, db_apply)
        return [
            {"app": evidence, "url_prefix": "/omni", "name": "omni-tasks evidence"},
            {"app": webhook, "url_prefix": "/omni-github", "name": "omni-tasks webhook"},
            {"app": slack, "url_prefix": "/omni-slack", "name": "omni-tasks Slack actions"},
        ]

    @property
    def fastapi_root_middlewares(self) -> list[dict[str, object]]:  # type: ignore[override]
        # Before Airflow creates a run: the form through the task's own check (issue 64).
        from omni_tasks.dag_support.submit import SubmitCheck

        return [
            {"middleware": SubmitCheck, "args": [], "kwargs": {}, "name": "omni-tasks submit check"}
        ]
