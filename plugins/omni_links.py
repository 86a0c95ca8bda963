"""Airflow plugin: links from a task to its Grafana dashboard and the night's HTML report, and
macros with the same URLs for templates."""

from __future__ import annotations

import os

from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperatorLink

DASHBOARD_UID = "omni-seed-tts-trend"


def grafana_url(benchmark: str = "seed_tts_en") -> str:
    base = os.environ.get("OMNI_GRAFANA_URL", "http://localhost:3000").rstrip("/")
    return f"{base}/d/{DASHBOARD_UID}?var-benchmark={benchmark}"


def report_url(nightly: str, benchmark: str = "seed_tts_en") -> str:
    base = os.environ.get("OMNI_REPORT_BASE_URL")
    if base:
        return f"{base.rstrip('/')}/{benchmark}_{nightly}.html"
    home = os.environ.get("OMNI_HOME", os.path.expanduser("~/.local/share/omni-tasks"))
    return f"file://{home}/reports/{benchmark}_{nightly}.html"


class GrafanaLink(BaseOperatorLink):
    name = "Grafana trend"

    def get_link(self, operator, *, ti_key) -> str:  # type: ignore[no-untyped-def]
        return grafana_url()


class ReportLink(BaseOperatorLink):
    name = "Nightly report"

    def get_link(self, operator, *, ti_key) -> str:  # type: ignore[no-untyped-def]
        night = ti_key.run_id.split("__")[-1][:10] if "__" in ti_key.run_id else ti_key.run_id[:10]
        return report_url(night)


class OmniLinksPlugin(AirflowPlugin):
    name = "omni_links"
    global_operator_extra_links = [GrafanaLink(), ReportLink()]  # noqa: RUF012 (the plugin API)
    macros = [grafana_url, report_url]  # noqa: RUF012 (the plugin API)
