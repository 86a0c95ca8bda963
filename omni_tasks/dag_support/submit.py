"""A trigger form checked when it is submitted (issue 64): the API server runs the check the
DAG's first task runs, against the same deployment config, and refuses a form the task would
refuse (HTTP 400 naming the field) before Airflow creates the run.

Airflow checks a form's declared Params when it is submitted, but merges top-level conf keys
it does not declare into the run's params unchecked; and what the config offers (its targets,
lanes, `ab.repos`) no Param knows. So a hostile form used to be accepted and only refused by
the first task. `SubmitCheck` is an ASGI middleware (the plugin's `fastapi_root_middlewares`)
on `POST …/api/v2/dags/{dag_id}/dagRuns` and `POST …/api/v2/backfills` of the DAGs in FORMS:

- the body is read to at most MAX_BODY bytes (a larger one is refused: 413);
- only a caller Airflow would let trigger that DAG is answered by this check (anyone else gets
  Airflow's own 401/403: a refusal names what the config offers);
- the form is the DAG's Params' defaults under the conf, as the task's `context["params"]`;
- `check` runs the task's own resolver on it (deployment.resolve_night, one_series_form,
  resolve_ab, regrade's check_form), the config read as the tasks read it (the Airflow
  Variable, else OMNI_NIGHTLY_CONFIG); a refusal of the form ("trigger form: FIELD: …") is a
  400, `{"detail": …, "field": FIELD, "dag_id": …}`.

A config that cannot be read or used (and any other failure of the check) lets the request
through to Airflow unchanged and is logged: the task still refuses what it must, and a config
problem never blocks the API. Every other request passes untouched.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from omni_tasks.dag_support.renamed import RENAMED

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20  # a trigger body is a form: a few KiB
FORM_REFUSED = "trigger form: "  # how every refusal of a form's field begins (its field next)
MAX_SAID = 2000  # characters of a refusal echoed back (a field's name is the sender's)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Form = dict[str, object]  # a trigger form as posted: untrusted, narrowed by the task's check
Check = Callable[[Form, str | None], None]
# (scope, dag_id) -> whether Airflow would let this caller trigger the DAG.
Authorize = Callable[[Scope, str], Awaitable[bool]]
# () -> the Airflow Variable omni_nightly_config (None when unset).
ReadVariable = Callable[[], str | None]


# Each form-taking DAG: its Params (their defaults are under the conf in the task's params) and
# the check its first task runs on the form (dag_support/tasks.py).
def _nightly(form: Form, variable: str | None) -> None:
    from omni_tasks.deployment.night import resolve_night

    resolve_night(form, variable)  # tasks.record_heads → runtime.night_of


def _one_series(kind: str, form: Form, variable: str | None) -> None:
    from omni_tasks.deployment.one_series import one_series_form

    one_series_form(kind, form, variable)  # tasks.bisect / tasks.ablate


def _ab(form: Form, variable: str | None) -> None:
    from omni_tasks.ab.config import resolve_ab

    resolve_ab({k: v for k, v in form.items() if v not in (None, "")}, variable)  # tasks.ab


def _regrade(form: Form, variable: str | None) -> None:
    from omni_tasks.jobs.regrade import check_form

    check_form(form)  # tasks.regrade (the run's own series' grader needs the results DB)


FORMS: dict[str, tuple[str, Check]] = {
    "omni_nightly": ("nightly_params", _nightly),
    "omni_bisect": ("bisect_params", functools.partial(_one_series, "bisect")),
    "omni_ablate": ("ablate_params", functools.partial(_one_series, "ablate")),
    "omni_ab": ("ab_params", _ab),
    "omni_regrade": ("regrade_params", _regrade),
}
# A renamed DAG's alias (for one release) takes its new DAG's form and check.
FORMS.update({old: FORMS[new] for new, old in RENAMED.items()})


@functools.cache
def defaults(dag_id: str) -> Form:
    """The DAG's Params' defaults (what a field the conf leaves out is in the task)."""
    from omni_tasks.dag_support import params

    built = getattr(params, FORMS[dag_id][0])()
    return {name: param.value for name, param in built.items()}


def check(dag_id: str, conf: Mapping[str, object], variable: str | None) -> dict[str, str] | None:
    """The refusal the DAG's first task would give this conf, as the 400's body: the task's own
    message and the field it names (None: it would take it, or the refusal is the config's, not
    the form's). `variable`: the Airflow Variable's value."""
    form = {**defaults(dag_id), **conf}
    try:
        FORMS[dag_id][1](form, variable)
    except ValueError as exc:  # ConfigError, RegradeFormError
        message = str(exc)
        if not message.startswith(FORM_REFUSED):
            log.warning("%s: submit check skipped, the config is refused: %s", dag_id, message)
            return None
        return {"detail": message[:MAX_SAID], "field": _field(message), "dag_id": dag_id}
    return None


def _field(message: str) -> str:
    """The field a refusal names: "trigger form: FIELD: why" or "trigger form: FIELD 'value'
    is not …"."""
    head = message[len(FORM_REFUSED) :].split(": ", 1)[0]
    return (head.split(" ", 1)[0] if " " in head and "," not in head else head)[:200]


def airflow_variable() -> str | None:
    """The Variable `omni_nightly_config`, as the tasks read it (None when unset)."""
    from airflow.models import Variable

    from omni_tasks.deployment.reading import VARIABLE

    value = Variable.get(VARIABLE, default_var=None)
    return None if value is None else str(value)


async def airflow_authorized(scope: Scope, dag_id: str) -> bool:
    """Whether Airflow would let this request trigger `dag_id` (its token check and its
    auth manager's POST on the DAG's runs, as its trigger route asks)."""
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import (
        requires_access_dag,
        resolve_user_from_token,
    )
    from fastapi import HTTPException
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request

    request = Request(scope)
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    token = credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None
    try:
        user = await resolve_user_from_token(token or request.cookies.get(COOKIE_NAME_JWT_TOKEN))
        allowed = requires_access_dag("POST", DagAccessEntity.RUN, dag_id)
        await run_in_threadpool(allowed, request, user)
    except HTTPException:
        return False
    return True


_DAG_RUNS = re.compile(r"/api/v2/dags/(?P<dag_id>[^/]+)/dagRuns/?")
_BACKFILLS = re.compile(r"/api/v2/backfills/?")


def _route(scope: Scope) -> tuple[str, str | None] | None:
    """("dagRuns", its DAG id) or ("backfills", None: the body names it) when the request
    creates DAG runs, else None."""
    if scope.get("type") != "http" or scope.get("method") != "POST":
        return None
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    if root and path.startswith(root):
        path = path[len(root) :]
    found = _DAG_RUNS.fullmatch(path)
    if found is not None:
        return "dagRuns", found.group("dag_id")
    return ("backfills", None) if _BACKFILLS.fullmatch(path) else None


def _form_of(route: tuple[str, str | None], body: object) -> tuple[str, object] | None:
    """(dag_id, conf) of a trigger body, or None when Airflow itself will refuse its shape."""
    if not isinstance(body, dict):
        return None
    kind, dag_id = route
    if kind == "dagRuns":
        conf = body.get("conf")
    else:
        dag_id, conf = body.get("dag_id"), body.get("dag_run_conf")
    return (dag_id, conf) if isinstance(dag_id, str) else None


class SubmitCheck:
    """The ASGI middleware: see the module's docstring."""

    def __init__(
        self,
        app: ASGIApp,
        authorize: Authorize | None = None,
        variable: ReadVariable | None = None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.authorize = authorize or airflow_authorized
        self.variable = variable or airflow_variable
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = _route(scope)
        if route is None or (route[0] == "dagRuns" and route[1] not in FORMS):
            await self.app(scope, receive, send)
            return
        body = await _read(scope, receive, self.max_body)
        if body is None:
            too_big = {"detail": f"a trigger body is at most {self.max_body} bytes"}
            await _answer(scope, receive, send, 413, too_big)
            return
        refused = await self._refusal(route, scope, body)
        if refused is not None:
            await _answer(scope, receive, send, 400, refused)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _refusal(
        self, route: tuple[str, str | None], scope: Scope, raw: bytes
    ) -> dict[str, str] | None:
        """The 400's body when the task would refuse this form, else None (Airflow answers)."""
        from starlette.concurrency import run_in_threadpool

        try:
            parsed = json.loads(raw)  # as FastAPI reads the body (NaN literals included)
        except (ValueError, RecursionError):
            return None  # Airflow answers it (422)
        found = _form_of(route, parsed)
        if found is None or found[0] not in FORMS:
            return None
        dag_id, conf = found
        if conf is not None and not isinstance(conf, dict):
            return None  # Airflow answers it (422)
        try:
            if not await self.authorize(scope, dag_id):
                return None  # Airflow answers it (401/403)
            return await run_in_threadpool(self._check, dag_id, conf or {})
        except Exception:  # the check's own failure never blocks the API
            log.exception("%s: submit check failed; the request goes to Airflow", dag_id)
            return None

    def _check(self, dag_id: str, conf: Form) -> dict[str, str] | None:
        try:
            variable = self.variable()
        except Exception as exc:  # no metadata DB, a secrets backend down: the config's
            log.warning("%s: submit check skipped, Variable unreadable: %s", dag_id, exc)
            return None
        return check(dag_id, conf, variable)


async def _read(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The request body, or None past `limit` bytes (never more than that is read)."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length" and value.isdigit() and int(value) > limit:
            return None
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: Airflow sees the same
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, once; then the client's own messages (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, doc: Any) -> None:
    from starlette.responses import JSONResponse

    await JSONResponse(doc, status_code=status)(scope, receive, send)
