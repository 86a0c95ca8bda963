"""A local Kubernetes API with the pod endpoints omni-tasks uses (create, read, delete), for
the real `kubernetes` client. Its "pod" is the simulator on loopback: created when the pod is,
on the container's port, stopped when the pod is deleted; the pod's IP is 127.0.0.1."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from omni_tasks import benchmarks
from omni_tasks.synthesis.simulator import SimulatorConfig, running_simulator


@dataclass
class KubeState:
    profile: str = "main"
    created: list[dict[str, Any]] = field(default_factory=list)  # pod bodies, as sent
    deleted: list[str] = field(default_factory=list)
    live: dict[str, contextlib.ExitStack] = field(default_factory=dict)
    phase: str = "Running"  # "Failed": the container exits before it is ready


def kube_app(state: KubeState) -> Starlette:
    def pod_doc(body: dict[str, Any], ns: str) -> dict[str, Any]:
        return {
            **body,
            "metadata": {**body["metadata"], "namespace": ns, "uid": body["metadata"]["name"]},
            "status": {"phase": state.phase, "podIP": "127.0.0.1"},
        }

    async def create(request: Request) -> Response:
        body = await request.json()
        ns = request.path_params["ns"]
        state.created.append(body)
        port = body["spec"]["containers"][0]["ports"][0]["containerPort"]
        if state.phase == "Running":
            stack = contextlib.ExitStack()
            stack.enter_context(
                running_simulator(
                    SimulatorConfig(
                        state.profile, transcript=True, answerers=benchmarks.answerers()
                    ),
                    port,
                )
            )
            state.live[body["metadata"]["name"]] = stack
        return JSONResponse(pod_doc(body, ns), status_code=201)

    async def read(request: Request) -> Response:
        name = request.path_params["name"]
        body = next((b for b in state.created if b["metadata"]["name"] == name), None)
        if body is None or name in state.deleted:
            return JSONResponse({"kind": "Status", "code": 404, "reason": "NotFound"}, 404)
        return JSONResponse(pod_doc(body, request.path_params["ns"]))

    async def delete(request: Request) -> Response:
        name = request.path_params["name"]
        state.deleted.append(name)
        stack = state.live.pop(name, None)
        if stack is not None:
            stack.close()
        return JSONResponse({"kind": "Status", "apiVersion": "v1", "status": "Success"})

    return Starlette(
        routes=[
            Route("/api/v1/namespaces/{ns}/pods", create, methods=["POST"]),
            Route("/api/v1/namespaces/{ns}/pods/{name}", read, methods=["GET"]),
            Route("/api/v1/namespaces/{ns}/pods/{name}", delete, methods=["DELETE"]),
        ]
    )
