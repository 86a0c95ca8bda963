"""Import the fleet's nightlies from the CI that runs them (Buildkite).

Lists a pipeline's builds through the Buildkite REST API; each build's artifacts are matched
against the artifact rules (`buildkite_rules.yaml`: pipeline, path glob → benchmark, model,
lane); a matched artifact is downloaded and imported as that night's run of its series, with
the build's number, commit, branch, step and agent in its provenance, and upstream's own gate
verdict (pass / fail / not evaluated) beside it; a JSON artifact no rule matches is listed,
never guessed. Idempotent: an artifact already imported (by its Buildkite id) is skipped
without downloading. A 429 waits for Retry-After; 5xx and connection errors are retried with
backoff; 401/404 on the pipeline stop with a message that says what to fix.

Buildkite is untrusted: each build and each artifact is isolated (an expired artifact, a
malformed build or a run that conflicts is listed as "skipped: reason" and newer builds are
still imported); an attempt a retry superseded is skipped (the latest attempt is the night's
run); every download has one total deadline, over all its attempts and the waits between
them; and a download is fetched only from the API's own origin or an allowed artifact host
(`artifact_hosts`), never from loopback, link-local or private addresses unless a host there is
listed by name. The address a host was checked at is the one connected to (a second DNS
answer cannot point the download elsewhere).

A run's key names its pipeline and build (`…:PIPELINE:buildN`): two pipelines that feed one
series (a rerun pipeline, a second CI) keep their runs apart. Runs imported before the
pipeline was in the key keep their keys (`…:buildN`); an artifact is recognised as imported
by its Buildkite id, never by its key, so they are not imported again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fnmatch
import ipaddress
import re
import socket
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import tenacity
import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from omni_tasks import benchmarks
from omni_tasks.alerts.infra import raise_infra
from omni_tasks.analysis.validity import run_validity
from omni_tasks.benchmarks.artifact import ParsedArtifact
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.seed_tts.artifact import ArtifactError, artifact_grader
from omni_tasks.contracts import JsonObject, json_objects
from omni_tasks.gates.history import threshold_at_commit
from omni_tasks.gates.table import Threshold, gates_on
from omni_tasks.importers.hardware import sku_of
from omni_tasks.importers.identity import identity_problem
from omni_tasks.records import records_of
from omni_tasks.series import Protocol, Series
from omni_tasks.store.runs import derive_run_key, imported_buildkite_artifact, save_run
from omni_tasks.synthesis.bounded import (
    MAX_JSON_BODY,
    ResponseRefused,
    parse_json,
    read_body_sync,
)
from omni_tasks.trust.commits import check_commit
from omni_tasks.trust.names import InvalidName, path_component, printable

DEFAULT_API = "https://api.buildkite.com/v2"
Query = dict[str, str | int]  # a request's query parameters
RULES = Path(__file__).resolve().parent / "buildkite_rules.yaml"


class ArtifactRule(BaseModel):
    """Artifacts of `pipeline` that a job of `step` uploaded under a path matching `artifact`
    are runs of this series (its lane filled in with the job's hardware)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pipeline: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")
    step: str = Field(min_length=1, max_length=300)  # the job's step key or label (fnmatch)
    artifact: str = Field(min_length=1, max_length=300)
    benchmark: str | None = None  # None: detected from the file
    model: str
    lane: str  # may hold `{sku}`: the job's hardware (importers/hardware.py), lower-cased
    expected: int | None = Field(None, ge=0, le=10**7)  # the suite's item count, when fixed
    protocol: Protocol = "chat"  # how the step's harness talks to the server
    blocking: bool = True  # false: the step is `grade: NonBlocking` / `soft_fail` upstream

    def matches(self, pipeline: str, path: str, job: JsonObject | None) -> bool:
        if pipeline != self.pipeline or not fnmatch.fnmatchcase(path, self.artifact):
            return False
        steps = (job or {}).get("step_key"), (job or {}).get("name"), (job or {}).get("label")
        return any(isinstance(s, str) and fnmatch.fnmatchcase(s, self.step) for s in steps)

    def lane_for(self, sku: str | None) -> str:
        """The lane of a job on `sku`; a lane that needs the hardware refuses a job that does
        not say it."""
        if "{sku}" not in self.lane:
            return self.lane
        if sku is None:
            raise BuildkiteError(
                f"its job names no hardware the rule's lane {self.lane} needs (no agent queue, "
                "pool or resource class that importers/hardware.py knows)"
            )
        return self.lane.replace("{sku}", sku.lower())


def load_rules(path: Path = RULES) -> list[ArtifactRule]:
    """The artifact rules of a rules file, each checked (its series must be a valid one)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BuildkiteError(f"{path}: cannot read artifact rules: {exc}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("rules"), list)
    ):
        raise BuildkiteError(f"{path}: expected `version: 1` and a `rules` list")
    out = []
    for i, raw in enumerate(doc["rules"]):
        try:
            rule = ArtifactRule(**raw) if isinstance(raw, dict) else None
            if rule is None:
                raise ValueError("a mapping of rule fields")
            if rule.benchmark is not None:
                benchmarks.get(rule.benchmark)
            Series(rule.benchmark or "seed_tts_en", rule.model, rule.lane_for("H100"))
        except (ValidationError, ValueError, benchmarks.UnknownBenchmark) as exc:
            raise BuildkiteError(f"{path}: rules[{i}]: {exc}") from None
        out.append(rule)
    return out


class BuildkiteError(RuntimeError):
    pass


MAX_ARTIFACT_BYTES = 512 * 1024 * 1024
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


class _Deadline(tenacity.stop.stop_base):
    """One total deadline over a request's attempts (a download's `download_deadline_s`); as
    tenacity's stop, no attempt once the wait before it would reach the deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._until = time.monotonic() + seconds

    def left(self) -> float:
        return self._until - time.monotonic()

    def timeout(self, cap: float) -> float:
        """An attempt's httpx timeout: never past the deadline."""
        return max(0.001, min(cap, self.left()))

    def __call__(self, state: tenacity.RetryCallState) -> bool:
        return (state.upcoming_sleep or 0.0) >= self.left()

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


@dataclass(frozen=True)
class BuildkiteSource:
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


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # run keys
    skipped: int = 0  # artifacts imported before
    builds_without_artifact: list[int] = field(default_factory=list)
    unknown: list[str] = field(
        default_factory=list
    )  # "BUILD: PATH" of JSON artifacts no rule matches
    gates: list[JsonObject] = field(default_factory=list)  # upstream's verdict per run
    invalid: list[str] = field(default_factory=list)  # runs that are not valid, and why
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped_builds: list[str] = field(default_factory=list)  # "BUILD: skipped: reason"
    refused: list[str] = field(default_factory=list)  # artifacts no rule's series agrees with
    retries: list[str] = field(default_factory=list)  # run keys of attempts a retry superseded


class ApiHostAuth(httpx.Auth):
    """The bearer token on requests to the API's own origin only: an artifact's download_url,
    a pagination link or a redirect to any other host gets no token (httpx also drops it on
    cross-origin redirects)."""

    def __init__(self, token: str, base_url: str) -> None:
        self._token = token
        self._origin = httpx.URL(base_url)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        url = request.url
        if (url.scheme, url.host, url.port) == (
            self._origin.scheme,
            self._origin.host,
            self._origin.port,
        ):
            request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


def check_host(url: httpx.URL, api: httpx.URL, allowed: tuple[str, ...]) -> str | None:
    """A request (a download_url, a redirect, a pagination link) goes to the API's own origin or
    to an allowed artifact host; a host matched only by its domain must not resolve to a
    loopback, link-local or private address (a host listed by name is the operator's choice).
    Returns the address that was checked, which the request must connect to (None: the API's
    origin or a host listed by name, connected to as named)."""
    if (url.scheme, url.host, url.port) == (api.scheme, api.host, api.port):
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
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not ip.is_global:
            raise BuildkiteError(f"artifact host {host} resolves to a non-public address {ip}")
    return str(ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0]))


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
        deadline_s: float | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """The response and its body (at most `cap` bytes, decompressed: Buildkite is not
        trusted), retried with backoff on a dropped connection, 429 (its Retry-After) and 5xx.
        `deadline_s` bounds the whole: every attempt and every wait between attempts."""
        deadline = None if deadline_s is None else _Deadline(deadline_s)
        stop: tenacity.stop.stop_base = tenacity.stop_after_attempt(self.src.max_retries + 1)
        if deadline is not None:  # no attempt that could not start before the deadline
            stop = tenacity.stop_any(stop, deadline)
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Again),
            stop=stop,
            wait=self._wait,
            sleep=time.sleep,
            reraise=True,
        )
        try:
            return retrying(self._get_once, url, params, cap, deadline)
        except _Again as exc:
            raise BuildkiteError(exc.final) from exc.__cause__

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Again) and exc.retry_after is not None:
            return exc.retry_after
        return self.src.backoff_s * 2 ** (state.attempt_number - 1)

    def _get_once(
        self, url: str, params: Query | None, cap: int, deadline: _Deadline | None
    ) -> tuple[httpx.Response, bytes]:
        timeout = REQUEST_TIMEOUT_S if deadline is None else deadline.timeout(REQUEST_TIMEOUT_S)
        try:
            with self.http.stream("GET", url, params=params, timeout=timeout) as r:
                if r.status_code == 429:
                    after = min(float(r.headers.get("Retry-After", "5")), 60.0)
                    raise _Again(f"Buildkite answered 429 on {r.request.url.path}", after)
                if r.status_code >= 500:
                    raise _Again(f"Buildkite answered {r.status_code} on {r.request.url.path}")
                _refuse(r, self.src)
                return r, read_body_sync(r, cap, None if deadline is None else deadline.left())
        except httpx.TransportError as exc:
            if deadline is not None and deadline.left() <= 0:
                why = deadline.passed(arriving=False)
                raise BuildkiteError(f"Buildkite: {why} on {httpx.URL(url).path}") from None
            raise _Again(f"Buildkite unreachable: {exc}") from exc
        except ResponseRefused as exc:
            late = deadline is not None and deadline.left() <= 0
            why = deadline.passed() if deadline is not None and late else str(exc)
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
        url: str | None = f"organizations/{self.src.org}/pipelines/{self.src.pipeline}/builds"
        query: Query | None = params
        while url:
            r, page = self._json(url, query)
            if not isinstance(page, list):
                raise BuildkiteError(f"Buildkite: a builds page that is not a list ({url})")
            yield from json_objects(page)
            url = r.links.get("next", {}).get("url")
            query = None  # the next link carries the query (an empty dict would replace it)

    def artifacts(self, build: int) -> list[JsonObject]:
        path = (
            f"organizations/{self.src.org}/pipelines/{self.src.pipeline}/builds/{build}/artifacts"
        )
        _, arts = self._json(path, {"per_page": 100})
        if not isinstance(arts, list):
            raise BuildkiteError(f"Buildkite: an artifact list that is not a list (build {build})")
        return json_objects(arts)

    def download(self, artifact: JsonObject) -> bytes:
        # An accuracy artifact is a few MB; `import` takes files up to the same bound.
        url = artifact.get("download_url")
        if not isinstance(url, str):
            raise BuildkiteError("the artifact has no download_url")
        try:
            return self._get(url, cap=MAX_ARTIFACT_BYTES, deadline_s=self.src.download_deadline_s)[
                1
            ]
        except BuildkiteError as exc:
            if "404" in str(exc):
                raise BuildkiteError("the artifact is gone (404: expired or deleted)") from None
            raise


def _already(conn: psycopg.Connection[Any], artifact_id: str) -> bool:
    return imported_buildkite_artifact(conn, artifact_id)


def import_pipeline(conn: psycopg.Connection[Any], src: BuildkiteSource) -> ImportReport:
    try:
        artifact_grader(src.harness_version)  # an unknown version stops before any download
    except ArtifactError as exc:
        raise BuildkiteError(str(exc)) from None
    rules = [r for r in (src.rules or tuple(load_rules())) if r.pipeline == src.pipeline]
    report = ImportReport()
    client = BuildkiteClient(src)
    try:
        builds = []
        for doc in client.builds():
            build = checked_build(doc)
            if isinstance(build, Build):
                builds.append(build)
            else:
                number = printable(str(doc.get("number"))[:20])
                report.skipped_builds.append(f"{number}: skipped: {build}")
        for build in sorted(builds, key=lambda b: b.number):
            _import_build(conn, client, src, rules, build, report)
    finally:
        client.close()
    return report


@dataclass(frozen=True)
class Build:
    """A build the API listed, its number and branch checked; the rest as the API gave it
    (read field by field, each narrowed where it is used)."""

    number: int
    branch: str
    doc: JsonObject

    def jobs(self) -> list[JsonObject]:
        return json_objects(self.doc.get("jobs"))


def checked_build(doc: JsonObject) -> Build | str:
    """A build from the API, or why it cannot be imported."""
    number, branch = doc.get("number"), doc.get("branch")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        return "its number is not a build number"
    if not isinstance(branch, str) or not branch:
        return "it names no branch"
    return Build(number, branch, doc)


# What one artifact's import may raise that is about that artifact alone.
_ARTIFACT_ERRORS = (BuildkiteError, ArtifactError, ValueError, KeyError, TypeError, psycopg.Error)


def _import_build(
    conn: psycopg.Connection[Any],
    client: BuildkiteClient,
    src: BuildkiteSource,
    rules: list[ArtifactRule],
    build: Build,
    report: ImportReport,
) -> None:
    """One build's artifacts, each on its own: a failure skips that artifact, never the
    build's others or a newer build."""
    number = build.number
    try:
        artifacts = client.artifacts(number)
    except BuildkiteError as exc:
        report.skipped_builds.append(f"{number}: skipped: {exc}")
        return
    jobs = _jobs(build)
    superseded = _superseded_jobs(build)
    matched = []
    for a in artifacts:
        path = str(a.get("path") or a.get("filename") or "")
        job = jobs.get(str(a.get("job_id")))
        candidates = [r for r in rules if r.matches(src.pipeline, path, job)]
        if candidates:
            matched.append((a, candidates))
        elif path.endswith(".json"):
            report.unknown.append(f"{number}: {printable(path[:300])}")
    if not matched:
        report.builds_without_artifact.append(number)
        return
    # The latest attempt of each job first: it is the night's run; an attempt a retry
    # superseded is stored beside it as a retry, never as a second night.
    matched.sort(key=lambda m: str(m[0].get("job_id")) in superseded)
    for art, candidates in matched:
        try:
            if _already(conn, str(art["id"])):
                report.skipped += 1
                continue
            retry = str(art.get("job_id")) in superseded
            _import_one(conn, client, src, build, art, candidates, report, retry)
        except _ARTIFACT_ERRORS as exc:
            conn.rollback()  # what this artifact wrote; earlier ones are committed
            path = printable(str(art.get("path") or "")[:300])
            report.skipped_builds.append(f"{number}: skipped {path}: {printable(str(exc))[:300]}")


def _superseded_jobs(build: Build) -> set[str]:
    """Jobs a retry replaced (Buildkite marks them `retried`, naming the new attempt in
    `retried_in_job_id`): their artifacts are retries, not the night's run."""
    return {
        str(job.get("id"))
        for job in build.jobs()
        if job.get("retried") or job.get("retried_in_job_id")
    }


def _jobs(build: Build) -> dict[str, JsonObject]:
    """The build's jobs by id (an artifact names the job that uploaded it)."""
    return {str(job["id"]): job for job in build.jobs() if job.get("id") is not None}


@dataclass(frozen=True)
class JobProvenance:
    """What a run keeps of the job that uploaded it: its step, agent and hardware, and the
    harness's eval switches it ran with (each printable and bounded: Buildkite's data)."""

    job_id: str | None = None
    step_key: str | None = None
    step: str | None = None
    agent: str | None = None
    sku: str | None = None
    eval_switches: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        """The fields it has (the run's `source.buildkite` carries them)."""
        out: JsonObject = {k: v for k, v in dataclasses.asdict(self).items() if v}
        return out


def _provenance(build: Build, job: JsonObject) -> JobProvenance:
    agent = job.get("agent")

    def said(value: JsonValue) -> str | None:
        return printable(str(value)[:200]) if value else None

    return JobProvenance(
        job_id=said(job.get("id")),
        step_key=said(job.get("step_key")),
        step=said(job.get("name") or job.get("label")),
        agent=said(agent.get("name")) if isinstance(agent, dict) else None,
        sku=said(sku_of(job)),
        eval_switches=eval_switches(build, job),
    )


# The harness's switches, under both spellings: 0.30's (`SEED_TTS_WER_EVAL`,
# `*_SAVE_ITEMS`, `*_SAVE_EVAL_ITEMS`) and upstream main's (`WER_EVAL`, `SAVE_EVAL_ITEMS`).
EVAL_SWITCHES = {
    "SEED_TTS_WER_EVAL": "wer_eval",
    "WER_EVAL": "wer_eval",
    "SEED_TTS_WER_SAVE_ITEMS": "save_items",
    "DAILY_OMNI_SAVE_EVAL_ITEMS": "save_items",
    "VIDEOMME_SAVE_EVAL_ITEMS": "save_items",
    "SAVE_EVAL_ITEMS": "save_items",
    "SEED_TTS_SIM_EVAL": "sim_eval",
}
_ASSIGNMENT = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?([A-Z][A-Z0-9_]{1,60})=(\S{0,20})")


def eval_switches(build: Build, job: JsonObject) -> dict[str, str]:
    """The eval switches a job ran with, as set in the build's or job's `env` or on its
    command line (`SEED_TTS_WER_EVAL=1 pytest ...`), each under the name it was given."""
    found: dict[str, str] = {}
    for env in (build.doc.get("env"), job.get("env")):
        if isinstance(env, dict):
            found.update({k: str(v)[:20] for k, v in env.items() if k in EVAL_SWITCHES})
    command = job.get("command")
    if isinstance(command, str):
        for name, value in _ASSIGNMENT.findall(command[:100_000]):
            if name in EVAL_SWITCHES:
                found[name] = value.strip("'\"")
    return {k: printable(v) for k, v in sorted(found.items())}


def _import_one(
    conn: psycopg.Connection[Any],
    client: BuildkiteClient,
    src: BuildkiteSource,
    build: Build,
    art: JsonObject,
    candidates: list[ArtifactRule],
    report: ImportReport,
    retry: bool = False,
) -> None:
    data = client.download(art)
    said = build.doc.get("commit")
    try:
        commit = None if said is None else check_commit(str(said), "commit")
    except InvalidName as exc:  # e.g. "HEAD" on a build started by hand
        report.warnings.append(f"build {build.number}: {exc}; stored without a commit")
        commit = None
    options = ImportOptions(
        branch=build.branch,
        commit=commit,
        harness_version=src.harness_version,
        built=_built(build),
    )
    path = printable(str(art.get("path") or "")[:300])
    found = _agreeing_rule(data, art, options, candidates)
    if isinstance(found, str):
        if found.startswith("!"):
            report.errors.append(f"build {build.number}: {found[1:]}")
        else:
            report.refused.append(f"build {build.number}: {path}: {found}")
        return
    rule, parsed = found
    job = _provenance(build, _jobs(build).get(str(art.get("job_id")), {}))
    try:
        lane = rule.lane_for(job.sku)
    except BuildkiteError as exc:
        report.refused.append(f"build {build.number}: {path}: {exc}")
        return
    # The protocol keeps its own baseline: a realtime night is the series' `realtime`
    # variant (decisions, run keys and the fleet view are per variant), never the chat night.
    variant = parsed.spec.variant if rule.protocol == "chat" else rule.protocol
    spec = dataclasses.replace(
        parsed.spec,
        model=rule.model,
        lane=lane,
        variant=variant,
        trigger="retry" if retry else parsed.spec.trigger,
    )
    verdicts = upstream_verdicts(
        spec.series, parsed, spec.nightly, src.upstream_checkout, rule.expected, rule.protocol
    )
    problems = run_validity(
        spec,
        verdicts,
        expected_items=rule.expected,
        protocol_pin=benchmarks.get(spec.benchmark).protocol_pin,
        switches=job.eval_switches or None,
    )
    source: JsonObject = {
        **parsed.spec.source,
        "buildkite": {
            "org": src.org,
            "pipeline": src.pipeline,
            "build": build.number,
            "artifact_id": art["id"],
            "artifact": path,
            "web_url": build.doc.get("web_url"),
            "state": build.doc.get("state"),
            "protocol": rule.protocol,
            "blocking": rule.blocking,
            "retry": retry,
            **job.to_json(),
        },
        "upstream_gates": [*verdicts],
        "validity": [*problems],
    }
    spec = dataclasses.replace(spec, source=source)
    grading = (parsed.grader, parsed.grades) if parsed.clips else None
    # Two builds of one commit on one night are two runs: the pipeline and build number keep
    # keys apart (two pipelines of one series number their builds alike); an earlier attempt of
    # a retried job is kept under its job id.
    key = f"{derive_run_key(spec)}:{src.pipeline}:build{build.number}"
    if retry:
        key += f":retry-{path_component(str(art.get('job_id')))[:40]}"
    result = save_run(conn, spec, parsed.clips, grading, run_key=key)
    conn.commit()  # one artifact at a time: a sync that stops keeps what it imported
    if retry:
        report.retries.append(result.run_key)
        return
    report.imported.append(result.run_key)
    report.gates += [{"run_key": result.run_key, **v} for v in verdicts]
    if problems:  # "easy to miss in a nightly log": an invalid night is INFRA, not a pass
        report.invalid.append(f"{result.run_key}: {'; '.join(problems)}")
        protocol = "" if rule.protocol == "chat" else f" ({rule.protocol})"
        step = "blocking" if rule.blocking else "non-blocking (NonBlocking / soft_fail upstream)"
        raise_infra(
            conn,
            f"run-validity|{spec.series.key}" + (f"|{variant}" if protocol else ""),
            f"INFRA night not valid: {spec.series.label}{protocol}",
            [
                *problems,
                f"build {build.number} of {src.pipeline}",
                f"upstream step {job.step or '?'} on {job.sku or 'unknown hardware'}, {step}",
            ],
            dedup=str(spec.nightly),
            links=build_link(build),
        )
        conn.commit()
    report.warnings += [f"build {build.number}: {w}" for w in parsed.warnings]


BUILDKITE_WEB = "https://buildkite.com/"


def build_link(build: Build) -> dict[str, str] | None:
    """The build's page as a link that pastes (a message's link block, not its escaped text),
    only when it is a Buildkite page: the URL is Buildkite's data, so it is allow-listed by
    prefix and shape, never passed through as given."""
    url = build.doc.get("web_url")
    if (
        isinstance(url, str)
        and url.startswith(BUILDKITE_WEB)
        and re.fullmatch(r"[\w./:-]{1,300}", url)
    ):
        return {f"Buildkite build {build.number}": url}
    return None


def _agreeing_rule(
    data: bytes, art: JsonObject, options: ImportOptions, candidates: list[ArtifactRule]
) -> tuple[ArtifactRule, ParsedArtifact] | str:
    """The first rule (in file order) whose series the artifact's own fields agree with, and
    the artifact as that rule reads it; else why none does ("!" first: it did not parse)."""
    refusals = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(str(art.get("filename") or "artifact.json")).name
        path.write_bytes(data)
        read: dict[str | None, ParsedArtifact] = {}  # parsed once per benchmark
        for rule in candidates:
            try:
                if rule.benchmark not in read:
                    read[rule.benchmark] = benchmarks.import_artifact(path, options, rule.benchmark)
            except ArtifactError as exc:
                return f"!{exc}"
            parsed = read[rule.benchmark]
            problem = identity_problem(rule.model, rule.protocol, parsed.spec.summary or {})
            if problem is None:
                return rule, parsed
            refusals.append(f"not {rule.model} · {rule.lane}: {problem}")
    return "refused (never relabelled): " + "; ".join(refusals)


def _built(build: Build) -> dt.date | None:
    """The day the build was created (for an artifact that carries no date of its own)."""
    try:
        return dt.datetime.fromisoformat(str(build.doc.get("created_at") or "")).date()
    except ValueError:
        return None


def upstream_verdicts(
    series: Series,
    parsed: ParsedArtifact,
    nightly: dt.date,
    checkout: Path | None = None,
    expected_items: int | None = None,
    protocol: str = "chat",
) -> list[JsonObject]:
    """Upstream's own verdict for each of the series' gates over the night's `protocol` that
    upstream's test asserted that night, as it would assert it: the figure recomputed from the
    items (or the artifact's summary), judged against the threshold of that night — the test
    file's at the run's commit when a vllm-omni `checkout` has it, else the dated gate table's
    entry, which the verdict names (`gate_entry`: value, since, until, PR); a missing figure
    is `not_evaluated`. A test that asserts the night's protocol or item count first
    (`guard_failures`) fails every gate there."""
    bench = benchmarks.get(parsed.spec.benchmark)
    out: list[JsonObject] = []
    for gate, entry in gates_on(series, nightly, protocol):
        value = (parsed.spec.summary or {}).get(gate.figure)
        if parsed.clips:
            # A figure that is not a per-item mean keeps the artifact's own value.
            with contextlib.suppress(ValueError):
                value = bench.figure_mean(gate.figure, records_of(parsed.clips, parsed.grades))
        figure = float(value) if isinstance(value, int | float) else None
        threshold, source, used = entry.value, "gate table", entry.to_json()
        commit = parsed.spec.commit_sha
        if checkout is not None and commit and gate.test_file and gate.constant:
            found = threshold_at_commit(checkout, commit, gate.test_file, gate.constant)
            if found is not None:
                threshold, source = found, f"{gate.test_file} at {commit[:12]}"
                if found != entry.value:  # the file at the commit, not the table's entry
                    used = Threshold(found, None, source).to_json()
        out.append(
            {
                "gate": gate.describe(threshold),
                "figure": gate.figure,
                "protocol": gate.protocol,
                "value": figure,
                "threshold": threshold,
                "threshold_source": source,
                "gate_entry": used,
                "verdict": gate.verdict(figure, threshold),
            }
        )
    guard = bench.guard_failures(parsed.spec.summary or {}, expected_items)
    if guard:  # upstream's test stops at that assertion, before any threshold
        out = [{**v, "verdict": "fail", "assertion": guard[0]} for v in out]
    return out
