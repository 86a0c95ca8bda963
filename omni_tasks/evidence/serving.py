"""The evidence behind an alert over HTTP: the nightly HTML reports and clip audio, as a FastAPI
app the Airflow plugin mounts on the API server (`/omni`).

Airflow does not authenticate plugin apps, so this one does: every route depends on Airflow's
own `get_user` (a JWT in `Authorization: Bearer …` or the UI's session cookie). Names from the
URL are single path components; audio is read only through the audio path rule (under the
audio root), never from anywhere a URL names.
"""

from __future__ import annotations

import html
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import Response

from omni_tasks.config import get_settings
from omni_tasks.evidence.audio import AudioUnavailable, load_audio_bytes
from omni_tasks.evidence.links import PLOTLY_JS, dashboard_path
from omni_tasks.trust.names import InvalidName, path_component


def _component(value: str) -> None:
    try:
        if path_component(value) != value:
            raise InvalidName(value)
    except InvalidName:
        raise HTTPException(status_code=404, detail="not found") from None


MAX_REPORT_BYTES = 256 * 1024 * 1024


def _report_bytes(path: Path) -> bytes:
    """A report (or a server log) the nightly wrote: a regular file in its folder itself,
    never a link planted there (O_NOFOLLOW), a FIFO or a device (checked on the open
    descriptor)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise HTTPException(status_code=404, detail="no such report") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REPORT_BYTES:
            raise HTTPException(status_code=404, detail="no such report")
        return fh.read(MAX_REPORT_BYTES)


def index_page(reports: Path) -> str:
    """The evidence index: every night's report, newest first, by benchmark, with the trend
    dashboard's link (names are the nightly's own: `BENCHMARK_YYYY-MM-DD.html`)."""
    nights: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(reports.glob("*.html"), reverse=True) if reports.is_dir() else []:
        if path.is_symlink() or not path.is_file():
            continue  # what the nightly did not write is not listed (nor served)
        benchmark, _, night = path.stem.rpartition("_")
        nights.setdefault(night, []).append((benchmark or path.stem, path.name))
    grafana = get_settings().grafana_link_base
    rows = "".join(
        f"<tr><td>{html.escape(night)}</td><td>"
        + " · ".join(
            f'<a href="reports/{quote(name)}">{html.escape(bench)}</a>'
            for bench, name in sorted(entries)
        )
        + "</td></tr>"
        for night, entries in sorted(nights.items(), reverse=True)
    )
    dash = (
        f'<p><a href="{html.escape(grafana.rstrip("/") + dashboard_path([]))}">Trend dashboard'
        "</a></p>"
        if grafana
        else ""
    )
    body = (
        f"<table><tr><th>night</th><th>reports</th></tr>{rows}</table>"
        if rows
        else "<p>No nightly report yet: the nightly's refresh task writes one per night.</p>"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>omni-tasks evidence</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:.3em 1em;text-align:left}"
        "</style></head><body><h1>omni-tasks: nightly reports</h1>"
        f"{dash}{body}</body></html>"
    )


def evidence_app(auth: Any = None) -> FastAPI:
    """The app; `auth` is the dependency that authenticates (default: Airflow's get_user)."""
    if auth is None:
        from airflow.api_fastapi.core_api.security import get_user

        auth = get_user
    # No /docs, /redoc or /openapi.json: FastAPI serves those outside the app's dependencies,
    # so they would answer without a token.
    app = FastAPI(
        title="omni-tasks evidence",
        dependencies=[Depends(auth)],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.get("/")
    def index() -> Response:
        return Response(index_page(get_settings().home / "reports"), media_type="text/html")

    @app.get("/reports/{name}")
    def report(name: str) -> Response:
        _component(name)
        reports = get_settings().home / "reports"
        if name == PLOTLY_JS:  # the one script the reports load, beside them (write_page)
            return Response(
                _report_bytes(reports / name),
                media_type="text/javascript; charset=utf-8",
                headers={"X-Content-Type-Options": "nosniff"},
            )
        if not name.endswith(".html"):
            raise HTTPException(status_code=404, detail="no such report")
        return Response(_report_bytes(reports / name), media_type="text/html")

    @app.get("/server-logs/{name}")
    def server_log(name: str) -> Response:
        """A launched server's log: untrusted text, so plain text that no browser renders;
        alerts and check runs link here instead of quoting it."""
        _component(name)
        if not name.endswith(".log"):
            raise HTTPException(status_code=404, detail="no such log")
        return Response(
            _report_bytes(get_settings().home / "server-logs" / name),
            media_type="text/plain; charset=utf-8",
            headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"},
        )

    @app.get("/audio/{run_key}/{name}")
    def audio(run_key: str, name: str) -> Response:
        _component(run_key)
        _component(name)
        uri = f"{get_settings().audio_root_url}/{run_key}/{name}"
        try:
            data = load_audio_bytes(uri)  # the audio path rule: under the audio root only
        except AudioUnavailable:
            raise HTTPException(status_code=404, detail="no such clip") from None
        return Response(data, media_type="audio/wav")

    return app
