"""The Kubernetes path: the manifests in deploy/k8s parse into the `kubernetes` client's models
(what the API server would accept field by field), the server pod template is what
`pods.pod_manifest` builds, and the Helm values keep every secret in a Secret. (The official
chart's values.schema.json is not installable here, no Helm; the values name only keys the
chart documents: docs/operators/deploy.md.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
MODELS = {"Deployment": "V1Deployment", "Pod": "V1Pod", "Secret": "V1Secret"}


class _Body:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.data = json.dumps(doc)


def _model(doc: dict[str, Any]) -> Any:
    """A manifest as the client's typed model: unknown fields are dropped by the model, so the
    round trip must give the manifest back (a misspelt field would vanish)."""
    api = k8s.ApiClient()
    model = api.deserialize(_Body(doc), MODELS[doc["kind"]])
    assert api.sanitize_for_serialization(model) == doc, doc["metadata"]["name"]
    return model


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "deploy" / "k8s" / name).read_text()) if d]


def test_every_manifest_is_a_valid_model_with_no_secret_in_it() -> None:
    for name in ("gpu-workers.yaml", "server-pod-template.yaml", "secrets.example.yaml"):
        for doc in _docs(name):
            _model(doc)
    for secret in _docs("secrets.example.yaml"):
        assert all(v == "" for v in secret["stringData"].values()), secret["metadata"]["name"]


def test_gpu_workers_take_their_lanes_queue_on_their_lanes_nodes() -> None:
    for doc in _docs("gpu-workers.yaml"):
        pod = _model(doc).spec.template.spec
        worker = pod.containers[0]
        assert pod.node_selector and pod.tolerations, doc["metadata"]["name"]
        assert worker.args[:3] == ["celery", "worker", "--queues"]
        assert worker.resources.limits.get("nvidia.com/gpu")
        assert not worker.image.endswith(":latest") and re.search(r":\d", worker.image)
        assert pod.security_context.run_as_non_root is True
        for env in worker.env:
            if re.search(r"SECRET|FERNET|SQL_ALCHEMY|BROKER|BACKEND", env.name):
                assert env.value is None and env.value_from.secret_key_ref, env.name


def test_the_server_pod_template_is_what_the_image_strategy_builds() -> None:
    from omni_tasks.environments.pods import PodSpec, pod_manifest

    (doc,) = _docs("server-pod-template.yaml")
    built = pod_manifest(
        PodSpec.of("registry.example.com/vllm-omni:{commit}", "0" * 40, model=MODEL, gpus=2),
        "omni-server-COMMIT",
    )
    got = k8s.ApiClient().sanitize_for_serialization(built)
    got["spec"]["containers"][0]["image"] = doc["spec"]["containers"][0]["image"]
    assert got == doc


def test_helm_values_keep_secrets_in_secrets_and_pin_the_image() -> None:
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    assert values["executor"] == "CeleryExecutor" and values["airflowVersion"] == "3.3.2"
    for key in ("fernetKeySecretName", "jwtSecretName", "apiSecretKeySecretName"):
        assert values[key].startswith("omni-airflow-"), key
    assert not re.search(r"(?i)password|fernetKey:|jwtSecret:|token:", json.dumps(values["env"]))
    assert values["images"]["airflow"]["tag"] != "latest"
    assert values["config"]["core"]["auth_manager"].endswith("FabAuthManager")
    secrets = {d["metadata"]["name"] for d in _docs("secrets.example.yaml")}
    named = {values[k] for k in ("fernetKeySecretName", "jwtSecretName", "apiSecretKeySecretName")}
    named |= {v for k, v in values["data"].items() if k.endswith("SecretName")}
    assert named <= secrets, named - secrets  # every Secret the values name is in the example
