"""Servers from images: a lane whose stack ships as a container runs the commit's image as a
Kubernetes pod through the real `kubernetes` client — here against a local API server whose
"pod" is the simulator on loopback. The pod asks for the lane's accelerator, is used once
`/health` answers, and is deleted afterwards, also when it never became ready."""

from __future__ import annotations

import datetime as dt
import socket
from pathlib import Path

import pytest

from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.environments.pods import PodStartError
from omni_tasks.jobs.nightly import record_heads, run_branch
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.kube_api import KubeState, kube_app

MINICPM = "openbmb/MiniCPM-o-4_5"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    state = KubeState()
    with serve_in_thread(kube_app(state)) as url:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
            f"clusters: [{{name: test, cluster: {{server: '{url}'}}}}]\n"
            "users: [{name: test, user: {token: not-a-secret}}]\n"
            "contexts: [{name: test, context: {cluster: test, user: test}}]\n"
        )
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        yield state


def _params(**server: object) -> NightlyParams:
    return NightlyParams(
        branches=["main"],
        targets={"main": "vllm-serve"},
        environment={
            "strategy": "image",
            "image": "registry.example/vllm-omni:{commit}",
            "namespace": "omni",
        },
        server={
            "model": MINICPM,
            "gpus": 2,
            "gpu_resource": "amd.com/gpu",
            "startup_timeout_s": 20,
            **server,
        },
        transcript_mode=True,
        limit=5,
        lane="rocm-mi300",
    )


def test_the_commits_image_serves_the_run_as_a_pod_on_the_lanes_accelerators(db, cluster) -> None:
    params = _params(port=_free_port())  # the fake's pods share one IP: each its own port
    (plan,) = record_heads(db, [params], dt.date(2026, 11, 27), backfill=False)
    key = run_branch(db, params, plan, trigger="manual")
    run = db.execute(
        "SELECT status, model, lane, stack, n_expected FROM omni.run WHERE run_key = %s", (key,)
    ).fetchone()
    assert (run["status"], run["model"], run["lane"], run["n_expected"]) == (
        "complete",
        MINICPM,
        "rocm-mi300",
        5,
    )
    (pod,) = cluster.created
    container = pod["spec"]["containers"][0]
    assert container["image"] == f"registry.example/vllm-omni:{plan.commit}"
    assert run["stack"]["image"] == container["image"]
    assert container["command"] == ["vllm", "serve", MINICPM, "--omni"]
    assert container["args"][:2] == ["--host", "$(POD_IP)"]  # the pod's IP, not every address
    assert container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert container["resources"]["limits"] == {"amd.com/gpu": "2"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert pod["spec"]["restartPolicy"] == "Never"
    # Sandboxed, as sent to the API: its own account without the token, hardened, no secret.
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert pod["spec"]["serviceAccountName"] == "omni-server"
    assert pod["metadata"]["labels"]["omni-tasks/role"] == "server"  # what the policies select
    ctx = container["securityContext"]
    assert ctx["readOnlyRootFilesystem"] is True and ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]} and ctx["runAsNonRoot"] is True
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert all(set(v) == {"name", "emptyDir"} for v in pod["spec"]["volumes"])
    assert "secretKeyRef" not in str(container["env"]) and "envFrom" not in container
    assert cluster.deleted == [pod["metadata"]["name"]] and not cluster.live


def test_a_pod_that_ends_before_it_is_ready_fails_the_run_and_is_deleted(db, cluster) -> None:
    cluster.phase = "Failed"
    params = _params(port=_free_port())
    (plan,) = record_heads(db, [params], dt.date(2026, 11, 27), backfill=False)
    with pytest.raises(PodStartError, match="ended \\(Failed\\) before it was ready"):
        run_branch(db, params, plan, trigger="manual")
    assert cluster.deleted == [cluster.created[0]["metadata"]["name"]]
