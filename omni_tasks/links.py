"""Every URL a person clicks (alerts, dashboards, the Airflow plugin): one place, so a report or
an audio clip has one address. Evidence is served over HTTP by the plugin app under
`OMNI_PUBLIC_URL` + `/omni`; without a public URL there is no link (never a `file://` one)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

from omni_tasks.config import get_settings
from omni_tasks.names import path_component

DASHBOARD_UID = "omni-seed-tts-trend"
PREFIX = "/omni"  # the plugin app's mount point on the API server


def report_name(benchmark: str, nightly: dt.date | str) -> str:
    return f"{path_component(f'{benchmark}_{nightly}')}.html"


def report_url(benchmark: str, nightly: dt.date | str) -> str | None:
    base = get_settings().public_url
    if not base:
        return None
    return f"{base.rstrip('/')}{PREFIX}/reports/{quote(report_name(benchmark, nightly))}"


def served_report(path: str) -> str | None:
    """The served URL of a report file the nightly wrote (its name is all that travels)."""
    base = get_settings().public_url
    if not base:
        return None
    return f"{base.rstrip('/')}{PREFIX}/reports/{quote(path_component(path.rsplit('/', 1)[-1]))}"


def audio_url(run_key: str, file_name: str) -> str | None:
    base = get_settings().public_url
    if not base:
        return None
    folder, name = quote(path_component(run_key), safe=""), quote(path_component(file_name))
    return f"{base.rstrip('/')}{PREFIX}/audio/{folder}/{name}"
