"""Push dashboards and event annotations to Grafana (the nightly's refresh task).

Configured by OMNI_GRAFANA_URL + OMNI_GRAFANA_TOKEN; otherwise it only logs where the
dashboard JSON is. One deployment mode per install (OMNI_GRAFANA_DASHBOARDS), never both on one
uid: `provisioned` (the compose file: Grafana loads dashboards/*.json from files and refuses API
saves of them, so only annotations are pushed) or `api` (dashboards saved through the API into
a folder of their own that no provisioning uses). A dashboard is written only when it differs
from what Grafana has (so refreshing is idempotent), and each event becomes one annotation (its
id is stored on the event).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from grafana_client import GrafanaApi, TokenAuth
from grafana_client.client import GrafanaClientError

from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.grafana.dashboards import DASHBOARD_DIR, TREND_UID, dashboards
from omni_tasks.store import alerts as store
from omni_tasks.trust.redact import outbound

log = logging.getLogger(__name__)
FOLDER_UID = "omni-tasks-api"  # not the provisioned folder ("omni-tasks")
FOLDER_TITLE = "omni-tasks (API)"


class GrafanaError(RuntimeError):
    """Grafana refused the configuration; the message says what to fix."""


_VOLATILE = ("id", "version")
# What Grafana's annotation tooltip would read as HTML or markdown (tags, links, images,
# emphasis, code, tables, headings), sent as numeric character references: literal text in
# HTML and in markdown alike.
_ANNOTATION_MARKUP = frozenset("&<>\"'\\`*_[]()!|~#")


def annotation_text(text: object) -> str:
    """An event's text as an annotation carries it: redacted, its markup characters as
    character references, and no URL or www. host that a renderer would turn into a link."""
    clean = outbound(text)
    out = "".join(f"&#{ord(c)};" if c in _ANNOTATION_MARKUP else c for c in clean)
    out = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)", "\\1\u2236", out)
    return out.replace("www.", "www\u2024")


@dataclass(frozen=True)
class RefreshReport:
    configured: bool
    dashboards_written: int = 0
    dashboards_unchanged: int = 0
    annotations_created: int = 0

    @property
    def summary(self) -> str:
        if not self.configured:
            return f"Grafana not configured (OMNI_GRAFANA_URL); dashboards JSON in {DASHBOARD_DIR}"
        return (
            f"{self.dashboards_written} dashboard(s) written, {self.dashboards_unchanged} "
            f"unchanged, {self.annotations_created} annotation(s) created"
        )


def client(url: str, token: str) -> GrafanaApi:
    return GrafanaApi.from_url(url, credential=TokenAuth(token), timeout=10.0)


def _found(api: GrafanaApi, uid: str) -> JsonObject | None:
    """Grafana's answer for a dashboard uid (dashboard and meta), or None."""
    try:
        return dict(api.dashboard.get_dashboard(uid))
    except GrafanaClientError as exc:
        if getattr(exc, "status_code", None) == 404:
            return None
        raise


def _ensure_folder(api: GrafanaApi) -> None:
    try:
        api.folder.get_folder(FOLDER_UID)
    except GrafanaClientError as exc:
        if getattr(exc, "status_code", None) != 404:
            raise
        api.folder.create_folder(FOLDER_TITLE, uid=FOLDER_UID)


def push_dashboards(api: GrafanaApi) -> tuple[int, int]:
    written = unchanged = 0
    _ensure_folder(api)
    for d in dashboards().values():
        found = _found(api, str(d["uid"])) or {}
        meta = found.get("meta")
        if isinstance(meta, dict) and meta.get("provisioned"):
            raise GrafanaError(
                f"dashboard {d['uid']} is file-provisioned in this Grafana, which refuses API "
                "saves of it: set OMNI_GRAFANA_DASHBOARDS=provisioned (the compose mode), or "
                "remove its provisioning to push through the API"
            )
        stored = found.get("dashboard")
        if (
            isinstance(stored, dict)
            and {k: v for k, v in stored.items() if k not in _VOLATILE} == d
        ):
            unchanged += 1
            continue
        api.dashboard.update_dashboard(
            {
                "dashboard": d,
                "folderUid": FOLDER_UID,
                "overwrite": True,
                "message": "omni-tasks refresh",
            }
        )
        written += 1
    return written, unchanged


def annotate_events(conn: psycopg.Connection[Any], api: GrafanaApi) -> int:
    created = 0
    for e in store.unannotated_events(conn):
        ms = int(e["time"].timestamp() * 1000)
        answer = api.annotations.add_annotation(
            dashboard_uid=TREND_UID,
            time_from=ms,
            time_to=ms,
            # Branch names and event texts are data: through the gate; the text, which
            # Grafana renders, escaped for it.
            tags=["omni-tasks", e["kind"], *(outbound(t)[:100] for t in e["tags"])],
            text=annotation_text(e["text"]),
        )
        store.set_annotation_id(conn, e["event_id"], answer.get("id"))
        conn.commit()  # recorded one by one: a crash never re-creates what was created
        created += 1
    return created


def refresh(conn: psycopg.Connection[Any]) -> RefreshReport:
    s = get_settings()
    if not (s.grafana_url and s.grafana_token):
        report = RefreshReport(configured=False)
        log.info(report.summary)
        return report
    api = client(s.grafana_url, s.grafana_token.get_secret_value())
    try:
        written, unchanged = push_dashboards(api) if s.grafana_dashboards == "api" else (0, 0)
        return RefreshReport(True, written, unchanged, annotate_events(conn, api))
    except GrafanaClientError as exc:
        if getattr(exc, "status_code", None) in (401, 403):
            raise GrafanaError(
                f"Grafana at {s.grafana_url} refused the token ({exc.status_code}): check "
                "OMNI_GRAFANA_TOKEN (a service account token with Editor on the folder)"
            ) from None
        raise
