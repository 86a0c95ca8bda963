"""The evidence app's path rule: names from URLs are single components, audio comes only from
under the audio root, and nothing is served without the auth dependency passing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from omni_tasks.config import get_settings
from omni_tasks.evidence.audio import write_audio
from omni_tasks.evidence.serving import evidence_app
from tests.factories import stored_decision


def _token_required(request: Request) -> str:
    if request.headers.get("authorization") != "Bearer good":
        raise HTTPException(status_code=401, detail="Not authenticated")
    return "user"


@pytest.fixture
def client(tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    (tmp_path / "home" / "reports").mkdir(parents=True)
    (tmp_path / "home" / "reports" / "seed_tts_en_2026-11-20.html").write_text("<html>r</html>")
    write_audio(
        str(tmp_path / "home" / "audio" / "run1" / "00001_u1.wav"),
        np.zeros(2400, np.float32),
        24_000,
    )
    (tmp_path / "secret.wav").write_bytes(b"RIFF-not-yours")
    os.symlink(tmp_path / "secret.wav", tmp_path / "home" / "audio" / "run1" / "link.wav")
    (tmp_path / "secret.html").write_text("<html>PLANTED</html>")
    os.symlink(tmp_path / "secret.html", tmp_path / "home" / "reports" / "planted.html")
    os.mkfifo(tmp_path / "home" / "reports" / "fifo.html")
    yield TestClient(evidence_app(auth=_token_required))
    get_settings.cache_clear()


def test_reports_and_audio_are_served_to_authenticated_callers(client) -> None:  # type: ignore[no-untyped-def]
    ok = {"Authorization": "Bearer good"}
    assert client.get("/reports/seed_tts_en_2026-11-20.html").status_code == 401
    r = client.get("/reports/seed_tts_en_2026-11-20.html", headers=ok)
    assert r.status_code == 200 and r.text == "<html>r</html>"
    a = client.get("/audio/run1/00001_u1.wav", headers=ok)
    assert a.status_code == 200 and a.content[:4] == b"RIFF"


@pytest.mark.parametrize(
    "path",
    [
        "/reports/..%2F..%2Fetc%2Fpasswd",
        "/reports/%2Fetc%2Fpasswd",
        "/audio/run1/link.wav",
        "/audio/..%2F..%2F/secret.wav",
        "/audio/run1/missing.wav",
        "/reports/x.json",
        "/reports/other.js",  # the reports' one script only
        "/reports/planted.html",  # a link planted in reports/ is not a report
        "/reports/fifo.html",  # nor a FIFO (and reading it does not hang)
    ],
)
def test_nothing_outside_its_place_is_served(client, path: str) -> None:  # type: ignore[no-untyped-def]
    assert client.get(path, headers={"Authorization": "Bearer good"}).status_code == 404


def test_alert_links_use_the_served_report_and_never_file_urls(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    from omni_tasks.alerts.messages import links_for

    d = stored_decision(nightly=dt.date(2026, 11, 20))
    monkeypatch.delenv("OMNI_PUBLIC_URL", raising=False)
    get_settings.cache_clear()
    assert "Report" not in links_for(d) and "file://" not in str(links_for(d))
    monkeypatch.setenv("OMNI_PUBLIC_URL", "https://airflow.example")
    get_settings.cache_clear()
    assert links_for(d)["Report"] == (
        "https://airflow.example/omni/reports/seed_tts_en_2026-11-20.html"
    )
    get_settings.cache_clear()


def test_the_reports_shared_plotly_script_is_served_as_javascript(client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A report written by `write_page` loads `plotly.min.js` from its own folder: the app
    serves that one file, as JavaScript a browser does not sniff as anything else."""
    from omni_tasks.reports.html import write_page

    page = tmp_path / "home" / "reports" / "seed_tts_en_2026-11-21.html"
    write_page(page, '<html><script src="plotly.min.js"></script></html>')
    assert client.get("/reports/plotly.min.js").status_code == 401
    r = client.get("/reports/plotly.min.js", headers={"Authorization": "Bearer good"})
    assert r.status_code == 200 and r.headers["content-type"] == "text/javascript; charset=utf-8"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert len(r.content) > 1_000_000 and b"plotly" in r.content[:2000].lower()


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"])
def test_no_api_docs_are_served_with_or_without_a_token(client, path: str) -> None:  # type: ignore[no-untyped-def]
    assert client.get(path).status_code in (401, 404)
    assert client.get(path, headers={"Authorization": "Bearer good"}).status_code == 404


def test_the_index_lists_each_nights_reports_and_nothing_planted(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/").status_code == 401
    page = client.get("/", headers={"Authorization": "Bearer good"})
    assert page.status_code == 200
    assert '<a href="reports/seed_tts_en_2026-11-20.html">seed_tts_en</a>' in page.text
    assert "2026-11-20" in page.text
    assert "planted" not in page.text and "fifo" not in page.text


def test_a_server_log_is_served_as_inert_text_and_linked_from_its_error(
    client, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The server's own words stay in its log; the error links the log, which the app serves
    behind auth as plain text no browser renders (a script in it does not run)."""
    from omni_tasks.evidence.links import server_log_url

    logs = tmp_path / "home" / "server-logs"
    logs.mkdir(parents=True)
    (logs / "main_2026-11-20_abc.log").write_text("<script>alert(1)</script> CUDA OOM\n")
    ok = {"Authorization": "Bearer good"}
    assert client.get("/server-logs/main_2026-11-20_abc.log").status_code == 401
    r = client.get("/server-logs/main_2026-11-20_abc.log", headers=ok)
    assert r.status_code == 200 and "CUDA OOM" in r.text
    assert r.headers["content-type"].startswith("text/plain")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-security-policy"] == "sandbox"
    assert client.get("/server-logs/..%2Freports%2Fx.html", headers=ok).status_code == 404
    monkeypatch.setenv("OMNI_PUBLIC_URL", "https://airflow.example")
    get_settings.cache_clear()
    assert server_log_url(str(logs / "main_2026-11-20_abc.log")) == (
        "https://airflow.example/omni/server-logs/main_2026-11-20_abc.log"
    )
    assert server_log_url(str(tmp_path / "elsewhere.log")) is None  # only what we wrote
