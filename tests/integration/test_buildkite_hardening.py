"""Buildkite import, hardened (issue 64): one deadline per download over all its attempts, the
pipeline in the run key, and a download connected to the address its host was checked at."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from omni_tasks.importers.buildkite import (
    ArtifactRule,
    BuildkiteClient,
    BuildkiteError,
    BuildkiteSource,
    import_pipeline,
)
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import small_artifact
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
from tests.fakes.buildkite_fleet import QWEN, QWEN_DIR, add


class Seen:
    """A server that records each request's path and Host header."""

    def __init__(self, body: bytes = b'{"ok": true}') -> None:
        self.hosts: list[str | None] = []
        self.body = body

    def app(self) -> Starlette:
        async def any_path(request: Request) -> Response:
            self.hosts.append(request.headers.get("host"))
            return Response(self.body, media_type="application/json")

        return Starlette(routes=[Route("/{p:path}", any_path)])


def test_a_download_has_one_deadline_over_all_its_attempts() -> None:
    """Storage that sends for 0.3 s and drops the connection, every time: with a 0.5 s deadline
    and five retries, the download stops after about 0.5 s (not six attempts of 0.3 s)."""
    attempts: list[float] = []

    async def drop(request: Request) -> Response:
        attempts.append(time.monotonic())

        async def then_drop() -> AsyncIterator[bytes]:
            for _ in range(6):
                await asyncio.sleep(0.05)
                yield b" "
            raise RuntimeError("connection dropped mid-body")

        return StreamingResponse(then_drop(), media_type="application/json")

    app = Starlette(routes=[Route("/{p:path}", drop)])
    with serve_in_thread(app) as url:
        src = BuildkiteSource(
            "vllm", "p", "t", f"{url}/v2", backoff_s=0.01, max_retries=5, download_deadline_s=0.5
        )
        client = BuildkiteClient(src)
        started = time.monotonic()
        try:
            with pytest.raises(BuildkiteError):
                client.download({"download_url": f"{url}/v2/blob"})
        finally:
            client.close()
        took = time.monotonic() - started
    assert took < 1.0, (took, len(attempts))  # six attempts of 0.3 s: 1.8 s
    assert len(attempts) <= 2, attempts


def _rule(pipeline: str) -> ArtifactRule:
    return ArtifactRule(
        pipeline=pipeline, step="*", artifact=f"{QWEN_DIR}/*.json", model=QWEN, lane="h100"
    )


def test_two_pipelines_of_one_series_keep_their_runs_apart(db) -> None:
    """Build 7 of two pipelines that feed one series, same commit and night: two runs, each key
    naming its pipeline; a run stored under the key without the pipeline is not imported
    again (artifacts are recognised by their Buildkite id)."""
    name = f"{QWEN_DIR}/qwen_omni_acc_seed_tts_20261128-021500.json"
    state = BuildkiteState()
    keys: dict[str, list[str]] = {}
    with serve_in_thread(buildkite_app(state)) as url:
        for pipeline in ("nightly-a", "nightly-b"):
            add(state, url, pipeline, 7, {name: small_artifact(n=4)})
        sources = {
            p: BuildkiteSource(
                "vllm",
                p,
                state.token,
                f"{url}/v2",
                backoff_s=0.01,
                artifact_hosts=STORAGE_HOSTS,
                rules=(_rule("nightly-a"), _rule("nightly-b")),
            )
            for p in ("nightly-a", "nightly-b")
        }
        for pipeline, src in sources.items():
            report = import_pipeline(db, src)
            assert not report.skipped_builds, report
            keys[pipeline] = report.imported
        (a,), (b,) = keys["nightly-a"], keys["nightly-b"]
        assert a != b and a.endswith(":nightly-a:build7") and b.endswith(":nightly-b:build7")
        runs = db.execute("SELECT run_key FROM omni.run ORDER BY run_key").fetchall()
        assert [r["run_key"] for r in runs] == [a, b]

        # A key stored before the pipeline was in it: still recognised, never imported twice.
        old = a.replace(":nightly-a:build7", ":build7")
        db.execute("UPDATE omni.run SET run_key = %s WHERE run_key = %s", (old, a))
        db.commit()
        again = import_pipeline(db, sources["nightly-a"])
    assert again.imported == [] and again.skipped == 1, again


def test_a_download_connects_to_the_address_its_host_was_checked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the storage host answers a public address when it is checked and a
    loopback one afterwards. The download goes to the checked address (standing in for it: a
    local server), with the host's name in its Host header; the loopback service is never hit."""
    real = socket.getaddrinfo
    public = "93.184.216.34"
    storage, elsewhere = Seen(), Seen(b"stolen")
    asked: list[str] = []
    with serve_in_thread(storage.app()) as good, serve_in_thread(elsewhere.app()) as bad:
        good_port, bad_port = httpx.URL(good).port, httpx.URL(bad).port

        def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host == "art.storage.test":
                asked.append(host)
                ip, to = (public, port) if len(asked) == 1 else ("127.0.0.1", bad_port)
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, to))]
            if host == public:  # the checked address, served here by the good server
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", good_port))]
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        src = BuildkiteSource(
            "vllm", "p", "t", f"{good}/v2", max_retries=0, artifact_hosts=("storage.test",)
        )
        client = BuildkiteClient(src)
        try:
            data = client.download({"download_url": f"http://art.storage.test:{good_port}/a"})
        finally:
            client.close()
    assert data == b'{"ok": true}'
    assert elsewhere.hosts == [] and len(asked) == 1
    assert storage.hosts == [f"art.storage.test:{good_port}"]


def test_https_keeps_the_name_for_sni_while_connecting_to_the_checked_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over TLS the certificate is checked against the name (SNI), not the pinned address."""
    public = "93.184.216.34"
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (public, port))],
    )
    sent: list[httpx.Request] = []

    def capture(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, stream=httpx.ByteStream(b"{}"))

    client = BuildkiteClient(BuildkiteSource("vllm", "p", "t", artifact_hosts=("storage.test",)))
    client.http._transport._inner = httpx.MockTransport(capture)  # type: ignore[attr-defined]
    try:
        assert client.download({"download_url": "https://a.storage.test/x"}) == b"{}"
    finally:
        client.close()
    (request,) = sent
    assert request.url.host == public and request.headers["host"] == "a.storage.test"
    assert request.extensions["sni_hostname"] == "a.storage.test"
