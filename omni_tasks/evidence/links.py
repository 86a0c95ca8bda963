"""Every URL a person clicks (alerts, dashboards, the Airflow plugin): one place, so a report or
an audio clip has one address. Evidence is served over HTTP by the plugin app under
`OMNI_PUBLIC_URL` + `/omni`; without a public URL there is no link (never a `file://` one)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote, urlencode

from omni_tasks.config import get_settings
from omni_tasks.trust.names import path_component

DASHBOARD_UID = "omni-seed-tts-trend"  # the trend dashboard (grafana.dashboards builds it)
PREFIX = "/omni"  # the plugin app's mount point on the API server
# Plotly's script, written once beside a folder's reports (reports.html.write_page) and loaded
# by each page by this relative name; the evidence app serves it from the reports folder.
PLOTLY_JS = "plotly.min.js"
# The DAGs renamed in 0.2.0, new id -> old: aliases for one release (dag_support/renamed.py).
RENAMED = {f"omni_{dag}": f"seed_tts_{dag}" for dag in ("nightly", "bisect", "regrade")}
# This project's DAGs: the plugin's task links appear on these only (a test checks the list).
DAG_IDS = frozenset(
    {
        "omni_nightly",
        "omni_bisect",
        "omni_regrade",
        "omni_freshness",
        "omni_ab",
        "omni_buildkite_sync",
        "omni_ablate",
        "omni_upstream_watch",
        *RENAMED.values(),  # the aliases of one release: their runs keep their links
    }
)


def dashboard_path(variables: list[tuple[str, str]]) -> str:
    """The trend dashboard's path on a Grafana, with template variables (`var-…`) set."""
    return f"/d/{DASHBOARD_UID}?{urlencode(variables)}"


def _served(*parts: str) -> str | None:
    base = get_settings().public_url
    if not base:
        return None
    return f"{base.rstrip('/')}{PREFIX}/" + "/".join(parts)


def report_name(benchmark: str, nightly: dt.date | str) -> str:
    return f"{path_component(f'{benchmark}_{nightly}')}.html"


def report_url(benchmark: str, nightly: dt.date | str) -> str | None:
    return _served("reports", quote(report_name(benchmark, nightly)))


def served_report(path: str) -> str | None:
    """The served URL of a report file the nightly wrote (its name is all that travels)."""
    return _served("reports", quote(path_component(path.rsplit("/", 1)[-1])))


def audio_url(audio_uri: str | None) -> str | None:
    """A stored clip's audio as the evidence app serves it (RUN/FILE), or None."""
    if not audio_uri or "/.imports/" in audio_uri:
        return None
    parts = audio_uri.rstrip("/").split("/")[-2:]
    if len(parts) != 2:
        return None
    return _served("audio", *(quote(path_component(p)) for p in parts))


def task_log_url(
    dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1
) -> str | None:
    """A task try's log in the Airflow UI (OMNI_AIRFLOW_URL), or None without it."""
    base = get_settings().airflow_url
    if not base:
        return None
    parts = [quote(p, safe="") for p in (dag_id, run_id, task_id)]
    path = f"/dags/{parts[0]}/runs/{parts[1]}/tasks/{parts[2]}"
    if map_index >= 0:
        path += f"/mapped/{map_index}"
    return f"{base.rstrip('/')}{path}?try_number={try_number}"


def server_log_url(log_path: str) -> str | None:
    """A launched server's log as the evidence app serves it (behind Airflow's auth), when the
    log lies in the home's server-logs folder, where the nightly writes it; else None."""
    home_logs = get_settings().home / "server-logs"
    name = log_path.rsplit("/", 1)[-1]
    if log_path != str(home_logs / name):
        return None
    return _served("server-logs", quote(path_component(name)))
