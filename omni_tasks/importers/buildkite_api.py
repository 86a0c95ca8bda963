"""The Buildkite REST API, read as untrusted: a pipeline's builds (every page), a build's
artifacts, and an artifact's bytes.

A 429 waits for Retry-After; 5xx and connection errors are retried with backoff; 401/404 on
the pipeline stop with a message that says what to fix. Every body is bounded (decompressed);
every download has one total deadline, over all its attempts and the waits between them; and a
download is fetched only from the API's own origin or an allowed artifact host
(`artifact_hosts`), never from loopback, link-local or private addresses unless a host there is
listed by name. The address a host was checked at is the one connected to (a second DNS
answer cannot point the download elsewhere). The token goes to the API's origin only.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
import socket
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from pydantic import JsonValue

from omni_tasks.benchmarks.artifact import MAX_ARTIFACT_BYTES
from omni_tasks.contracts import JsonObject, json_objects
from omni_tasks.importers.identity import ArtifactRule, BuildkiteError
from omni_tasks.synthesis.bounded import MAX_JSON_BODY, ResponseRefused, parse_json, read_body_sync
from omni_tasks.trust.names import printable

DEFAULT_API = "https://api.buildkite.com/v2"
Query = dict[str, str | int]  # a request's query parameters
DOWNLOAD_DEADLINE_S = 300.0  # one artifact's download, over all its attempts
REQUEST_TIMEOUT_S = 60.0  # connect / read / write / pool, per request
# Where Buildkite's artifact downloads redirect (its own S3 storage); a host listed here matches
# itself and its subdomains.
ARTIFACT_HOSTS = ("buildkiteartifacts.com", "s3.amazonaws.com")


class _Again(Exception):
    """A response worth retrying; `final` is the error if it is the last attempt."""

    def __init__(self, final: str, retry_after: float | None = None) -> None:
        super().__init__(final)
        self.final, self.retry_after = final, retry_after


class _Deadline:
    """One total deadline over a request's attempts and the waits between them (a download's
    `download_deadline_s`; `math.inf` for none)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._until = time.monotonic() + seconds

    def left(self) -> float:
        return self._until - time.monotonic()

    def passed(self, arriving: bool = True) -> str:
        what = "response body still arriving" if arriving else "no answer"
        return f"{what} after {self.seconds:g} s (its total deadline, over every attempt)"


def _refuse(r: httpx.Response, src: BuildkiteSource) -> None:
    """An answer that retrying cannot fix, as an error that says what to do."""
    if r.status_code == 401:
        raise BuildkiteError(
            "Buildkite rejected the API token (401): set BUILDKITE_API_TOKEN to a token "
            "with read_builds and read_artifacts scopes"
        )
    if r.status_code == 404:
        raise BuildkiteError(
            f"Buildkite has no {src.org}/{src.pipeline} or no access to it "
            f"(404 on {r.request.url.path})"
        )
    if r.status_code >= 400:
        raise BuildkiteError(f"Buildkite answered {r.status_code} on {r.request.url.path}")


def _same_origin(url: httpx.URL, origin: httpx.URL) -> bool:
    return (url.scheme, url.host, url.port) == (origin.scheme, origin.host, origin.port)


@dataclass(frozen=True)
class BuildkiteSource:
    """A pipeline to import, how to reach it, and what the import knows about its builds."""

    org: str
    pipeline: str
    token: str
    base_url: str = DEFAULT_API
    branch: str | None = None
    since: dt.date | None = None
    max_retries: int = 5
    backoff_s: float = 1.0
    harness_version: str | None = None  # the vllm-omni version the builds ran, when known
    rules: tuple[ArtifactRule, ...] = ()  # empty: the shipped rules
    # A git checkout of vllm-omni: each gate's threshold is read from its test file at the
    # build's commit (None: the gate table's dated history).
    upstream_checkout: Path | None = None
    artifact_hosts: tuple[str, ...] = ARTIFACT_HOSTS
    download_deadline_s: float = DOWNLOAD_DEADLINE_S


class ApiHostAuth(httpx.Auth):
    """The bearer token on requests to the API's own origin only: an artifact's download_url,
    a pagination link or a redirect to any other host gets no token (httpx also drops it on
    cross-origin redirects)."""

    def __init__(self, token: str, base_url: str) -> None:
        self._token = token
        self._origin = httpx.URL(base_url)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if _same_origin(request.url, self._origin):
            request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


def check_host(url: httpx.URL, api: httpx.URL, allowed: tuple[str, ...]) -> str | None:
    """A request (a download_url, a redirect, a pagination link) goes to the API's own origin or
    to an allowed artifact host; a host matched only by its domain must not resolve to a
    loopback, link-local or private address (a host listed by name is the operator's choice).
    Returns the address that was checked, which the request must connect to (None: the API's
    origin or a host listed by name, connected to as named)."""
    if _same_origin(url, api):
        return None
    host = url.host.lower().rstrip(".")
    if url.scheme not in ("https", "http") or not any(
        host == h or host.endswith("." + h) for h in allowed
    ):
        raise BuildkiteError(
            f"Buildkite pointed a download at {printable(host[:100])}, which is not the API "
            f"host or an allowed artifact host ({', '.join(allowed) or 'none'})"
        )
    if host in allowed:
        return None
    try:
        infos = socket.getaddrinfo(host, url.port or 443, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise BuildkiteError(f"artifact host {host}: {exc}") from None
    if not infos:
        raise BuildkiteError(f"artifact host {host} resolves to no address")
    ips = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    for ip in ips:
        if not ip.is_global:
            raise BuildkiteError(f"artifact host {host} resolves to a non-public address {ip}")
    return str(ips[0])


class PinnedTransport(httpx.BaseTransport):
    """Every hop (a redirect too) checked by check_host, then connected to the address that
    was checked, never to a second resolution of its name (DNS rebinding): the URL's host
    becomes that address while the Host header and TLS's SNI (hence certificate checks) keep
    the name."""

    def __init__(self, api: httpx.URL, allowed: tuple[str, ...]) -> None:
        self._api, self._allowed = api, allowed
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        address = check_host(request.url, self._api, self._allowed)
        if address is None:
            return self._inner.handle_request(request)
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions["sni_hostname"] = request.url.host
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=address),
            headers=request.headers,  # Host: the name, as httpx set it
            stream=request.stream,
            extensions=extensions,
        )
        return self._inner.handle_request(pinned)

    def close(self) -> None:
        self._inner.close()


class BuildkiteClient:
    def __init__(self, src: BuildkiteSource) -> None:
        self.src = src
        self.builds_path = f"organizations/{src.org}/pipelines/{src.pipeline}/builds"
        base = src.base_url.rstrip("/") + "/"
        api = httpx.URL(base)
        allowed = tuple(h.lower().strip(".") for h in src.artifact_hosts)
        self.http = httpx.Client(
            base_url=base,
            auth=ApiHostAuth(src.token, base),
            timeout=REQUEST_TIMEOUT_S,
            follow_redirects=True,  # artifact downloads redirect to storage (auth is dropped)
            transport=PinnedTransport(api, allowed),  # every hop, redirects included
        )

    def close(self) -> None:
        self.http.close()

    def _get(
        self,
        url: str,
        params: Query | None = None,
        cap: int = MAX_JSON_BODY,
        deadline_s: float = math.inf,
    ) -> tuple[httpx.Response, bytes]:
        """The response and its body (at most `cap` bytes, decompressed: Buildkite is not
        trusted), retried with backoff on a dropped connection, 429 (its Retry-After) and 5xx.
        `deadline_s` bounds the whole: every attempt and every wait between attempts (no
        attempt once the wait before it would reach the deadline)."""
        deadline, attempt = _Deadline(deadline_s), 0
        while True:
            try:
                return self._get_once(url, params, cap, deadline)
            except _Again as exc:
                wait = exc.retry_after
                if wait is None:
                    wait = self.src.backoff_s * 2**attempt
                attempt += 1
                if attempt > self.src.max_retries or wait >= deadline.left():
                    raise BuildkiteError(exc.final) from exc.__cause__
                time.sleep(wait)

    def _get_once(
        self, url: str, params: Query | None, cap: int, deadline: _Deadline
    ) -> tuple[httpx.Response, bytes]:
        timeout = max(0.001, min(REQUEST_TIMEOUT_S, deadline.left()))  # never past the deadline
        try:
            with self.http.stream("GET", url, params=params, timeout=timeout) as r:
                if r.status_code == 429:
                    after = min(float(r.headers.get("Retry-After", "5")), 60.0)
                    raise _Again(f"Buildkite answered 429 on {r.request.url.path}", after)
                if r.status_code >= 500:
                    raise _Again(f"Buildkite answered {r.status_code} on {r.request.url.path}")
                _refuse(r, self.src)
                return r, read_body_sync(r, cap, deadline.left())
        except httpx.TransportError as exc:
            if deadline.left() <= 0:
                why = deadline.passed(arriving=False)
                raise BuildkiteError(f"Buildkite: {why} on {httpx.URL(url).path}") from None
            raise _Again(f"Buildkite unreachable: {exc}") from exc
        except ResponseRefused as exc:
            why = deadline.passed() if deadline.left() <= 0 else str(exc)
            raise BuildkiteError(f"Buildkite: {why} on {httpx.URL(url).path}") from None

    def _json(self, url: str, params: Query | None = None) -> tuple[httpx.Response, JsonValue]:
        r, body = self._get(url, params)
        try:
            return r, parse_json(body, f"Buildkite {r.request.url.path}")
        except ResponseRefused as exc:
            raise BuildkiteError(str(exc)) from None

    def builds(self) -> Iterator[JsonObject]:
        params: Query = {"per_page": 100}
        if self.src.branch:
            params["branch"] = self.src.branch
        if self.src.since:
            params["created_from"] = f"{self.src.since.isoformat()}T00:00:00Z"
        url: str | None = self.builds_path
        query: Query | None = params
        while url:
            r, page = self._json(url, query)
            if not isinstance(page, list):
                raise BuildkiteError(f"Buildkite: a builds page that is not a list ({url})")
            yield from json_objects(page)
            url = r.links.get("next", {}).get("url")
            query = None  # the next link carries the query (an empty dict would replace it)

    def artifacts(self, build: int) -> list[JsonObject]:
        _, arts = self._json(f"{self.builds_path}/{build}/artifacts", {"per_page": 100})
        if not isinstance(arts, list):
            raise BuildkiteError(f"Buildkite: an artifact list that is not a list (build {build})")
        return json_objects(arts)

    def download(self, artifact: JsonObject) -> bytes:
        # An accuracy artifact is a few MB; `import` takes files up to the same bound.
        url = artifact.get("download_url")
        if not isinstance(url, str):
            raise BuildkiteError("the artifact has no download_url")
        try:
            deadline = self.src.download_deadline_s
            return self._get(url, cap=MAX_ARTIFACT_BYTES, deadline_s=deadline)[1]
        except BuildkiteError as exc:
            if "404" in str(exc):
                raise BuildkiteError("the artifact is gone (404: expired or deleted)") from None
            raise


@dataclass(frozen=True)
class Build:
    """A build the API listed, its number and branch checked; the rest as the API gave it
    (read field by field, each narrowed where it is used)."""

    number: int
    branch: str
    doc: JsonObject

    def jobs(self) -> dict[str, JsonObject]:
        """The build's jobs by id (an artifact names the job that uploaded it)."""
        jobs = json_objects(self.doc.get("jobs"))
        return {str(job["id"]): job for job in jobs if job.get("id") is not None}

    def superseded(self) -> set[str]:
        """Jobs a retry replaced (Buildkite marks them `retried`, naming the new attempt in
        `retried_in_job_id`): their artifacts are retries, not the night's run."""
        jobs = json_objects(self.doc.get("jobs"))
        return {
            str(job.get("id")) for job in jobs if job.get("retried") or job.get("retried_in_job_id")
        }


def checked_build(doc: JsonObject) -> Build | str:
    """A build from the API, or why it cannot be imported."""
    number, branch = doc.get("number"), doc.get("branch")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        return "its number is not a build number"
    if not isinstance(branch, str) or not branch:
        return "it names no branch"
    return Build(number, branch, doc)
