"""GitHub's webhook for on-demand A/Bs: a pull request labelled `omni-ab` triggers the omni_ab
DAG with the PR's SHAs. The body is read (bounded) and its `X-Hub-Signature-256` HMAC checked
against the webhook secret before anything else; a bad or missing signature is a 401 and
triggers nothing. The trigger form is then checked against the deployment config by the DAG
(`deployment.resolve_ab`): the webhook only picks the repository, PR and commits. A PR from
a fork is refused (403) unless the config's `ab.allow_forks` says otherwise; each event
(repository, PR, head SHA, the `labeled` action and its label: never the `X-GitHub-Delivery`
id, which a replay picks freely) starts at most one run, so a replay is answered 200 "already
handled"; a new run needs a new head."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from omni_tasks.contracts import JsonObject
from omni_tasks.trust.bodies import bounded_body, dig
from omni_tasks.trust.commits import is_full_sha

LABEL = "omni-ab"
MAX_BODY = 1024 * 1024  # GitHub caps payloads at 25 MB; a PR event is a few kB
_DELIVERY = re.compile(r"^[A-Za-z0-9-]{1,64}$")  # GitHub's X-GitHub-Delivery is a GUID


class AlreadyHandled(Exception):
    """This event already triggered its run (a replay): the run id it started."""


# The DAG run's conf and the event's dedupe key (labelled) -> the run id (AlreadyHandled when
# that key already started one).
Trigger = Callable[[JsonObject, str], str]


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub's `sha256=HEX` HMAC of the raw body, compared in constant time."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256=") :])


class Fork(Exception):
    """A pull request whose head lives in another repository (a fork)."""


def labelled(event: str, payload: Any, allow_forks: bool = False) -> tuple[JsonObject, str] | None:
    """The omni_ab form for a `pull_request` event that labels a PR `omni-ab`, with the event's
    dedupe key (repository, PR, head SHA, action and label); None for every other event (it is
    acknowledged and ignored). GitHub's delivery id is not the key: the same signed body re-sent
    under fresh delivery ids (a redelivery, or a replay by anyone who saw it) is the same
    request. A fork's PR raises Fork unless the config allows forks: its head is anyone's code,
    and the label is then the trust decision."""
    if event != "pull_request" or not isinstance(payload, dict):
        return None
    if payload.get("action") != "labeled" or dig(payload, "label", "name") != LABEL:
        return None
    pr, repo = payload.get("pull_request"), dig(payload, "repository", "full_name")
    if not isinstance(pr, dict) or not isinstance(repo, str):
        return None
    base, head = dig(pr, "base", "sha"), dig(pr, "head", "sha")
    number = pr.get("number")
    if not all(isinstance(sha, str) and is_full_sha(sha) for sha in (base, head)):
        return None
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    if dig(pr, "head", "repo", "full_name") != repo and not allow_forks:
        raise Fork(f"pull request #{number} comes from a fork; the deployment config allows none")
    conf: JsonObject = {"repo": repo, "pr": number, "base_sha": base, "head_sha": head}
    return conf, f"{repo}#{number}@{head}:{event}.labeled:{LABEL}"


def webhook_app(
    secret: Callable[[], bytes],
    trigger: Trigger,
    allow_forks: Callable[[], bool] = lambda: False,
) -> FastAPI:
    """The endpoint (`POST /github`). `secret` and `allow_forks` are read per request (an
    Airflow connection or the config can change); `trigger` starts the DAG run. No OpenAPI
    document or docs page is served (this app has no auth of Airflow's)."""
    app = FastAPI(
        title="omni-tasks GitHub webhook", docs_url=None, redoc_url=None, openapi_url=None
    )

    @app.post("/github")
    async def github(request: Request) -> JSONResponse:
        body = await bounded_body(request, MAX_BODY)
        if body is None:
            return JSONResponse({"error": "payload too large"}, status_code=413)
        if not signature_ok(secret(), body, request.headers.get("x-hub-signature-256")):
            return JSONResponse({"error": "bad signature"}, status_code=401)
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # JSONDecodeError, bad UTF-8, nesting
            return JSONResponse({"error": "not JSON"}, status_code=400)
        delivery = request.headers.get("x-github-delivery", "")
        if not _DELIVERY.match(delivery):
            return JSONResponse({"error": "no X-GitHub-Delivery id"}, status_code=400)
        try:
            found = labelled(request.headers.get("x-github-event", ""), payload, allow_forks())
        except Fork as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        if found is None:
            return JSONResponse({"triggered": None, "ignored": "not an omni-ab label"})
        try:
            return JSONResponse({"triggered": trigger(*found)}, status_code=202)
        except AlreadyHandled as done:
            return JSONResponse({"triggered": str(done), "already": "handled"})

    return app


WEBHOOK_CONN = "omni_github"  # its password is the webhook secret


def airflow_secret() -> bytes:
    """The webhook secret: the Airflow connection `omni_github`'s password, else
    OMNI_GITHUB_WEBHOOK_SECRET; empty (every request refused) when neither is set."""
    from omni_tasks.config import get_settings

    try:
        from airflow.models import Connection

        conn = Connection.get_connection_from_secrets(WEBHOOK_CONN)
        if conn.password:
            return str(conn.password).encode()
    except Exception:  # no such connection (Airflow raises its own NotFound types)
        pass
    s = get_settings().github_webhook_secret
    return s.get_secret_value().encode() if s is not None else b""


def run_id_of(conf: JsonObject, key: str) -> str:
    """One run per event key (labelled): the run id is the dedupe record (Airflow's dag_run
    keeps one run per id), so a replay under any delivery id names the same run. Readable
    repository, PR and head, then a digest of the whole key."""
    repo = re.sub(r"[^A-Za-z0-9_-]", "_", str(conf["repo"]).replace("/", "__"))[:100]
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"webhook__{repo}__{conf['pr']}__{str(conf['head_sha'])[:12]}__{digest}"


def airflow_trigger(conf: JsonObject, key: str) -> str:
    """Start an omni_ab DAG run with `conf` (in the API server, as its REST API would); a key
    that already started one raises AlreadyHandled."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.exceptions import DagRunAlreadyExists
    from airflow.utils.session import create_session
    from airflow.utils.types import DagRunTriggeredByType

    run_id = run_id_of(conf, key)
    try:
        with create_session() as session:
            run = trigger_dag(
                "omni_ab",
                triggered_by=DagRunTriggeredByType.REST_API,
                run_id=run_id,
                conf=conf,
                session=session,
            )
    except DagRunAlreadyExists:
        raise AlreadyHandled(run_id) from None
    return run.run_id if run is not None else run_id


def airflow_allow_forks() -> bool:
    """The deployment config's `ab.allow_forks` (false when unset or unreadable)."""
    from omni_tasks.ab.config import ab_allows_forks

    try:
        from airflow.models import Variable

        variable = Variable.get("omni_nightly_config", default_var=None)
    except Exception:  # no metadata DB reachable: the env var alone
        variable = None
    try:
        return ab_allows_forks(variable)
    except ValueError:
        return False
