"""The Kubernetes path: every manifest in deploy/k8s parses into the `kubernetes` client's
models with no field the API would not know (what the API server would accept field by field),
the server pod template is what `pods.pod_manifest` builds, the code under test runs in a
sandbox (the server pods' account, Role, NetworkPolicies and hardening match what pods.py
builds and calls), the GPU workers keep their logs and audio (a StatefulSet behind a headless
Service, the chart's API secret key, the shared audio root) and their running task (a grace
period for the nightly's longest task, liveness and readiness probes), and the Helm values keep
every secret in a Secret. (The values' keys against the chart's values.schema.json:
test_helm_values_schema.py.)"""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from omni_tasks.deployment.schema import ImageEnvironment, ServerConfig
from omni_tasks.environments import pods
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.kube_api import KubeState, kube_app

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
# kind: (apiVersion, the client's model)
KINDS = {
    "StatefulSet": ("apps/v1", "V1StatefulSet"),
    "Service": ("v1", "V1Service"),
    "Pod": ("v1", "V1Pod"),
    "Secret": ("v1", "V1Secret"),
    "ServiceAccount": ("v1", "V1ServiceAccount"),
    "Namespace": ("v1", "V1Namespace"),
    "Role": ("rbac.authorization.k8s.io/v1", "V1Role"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "V1RoleBinding"),
    "NetworkPolicy": ("networking.k8s.io/v1", "V1NetworkPolicy"),
}
_PRIMITIVE = {"str", "int", "float", "bool", "date", "datetime", "object"}


class _Body:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.data = json.dumps(doc)


def _unknown_fields(value: Any, klass: str, where: str) -> list[str]:
    """The fields of `value` that the client's model `klass` does not declare, by path."""
    if klass in _PRIMITIVE:
        return []
    if m := re.fullmatch(r"list\[(.+)\]", klass):
        return [u for i, v in enumerate(value) for u in _unknown_fields(v, m[1], f"{where}[{i}]")]
    if m := re.fullmatch(r"dict[(\[]str, (.+)[)\]]", klass):  # the client spells both
        return [u for k, v in value.items() for u in _unknown_fields(v, m[1], f"{where}.{k}")]
    model = getattr(k8s.models, klass)
    if not isinstance(value, dict):
        return [f"{where}: {type(value).__name__}, not a {klass}"]
    by_json = {j: p for p, j in model.attribute_map.items()}
    unknown = []
    for key, v in value.items():
        if key not in by_json:
            unknown.append(f"{where}.{key}")
        else:
            unknown += _unknown_fields(v, model.openapi_types[by_json[key]], f"{where}.{key}")
    return unknown


def _model(doc: dict[str, Any]) -> Any:
    """A manifest as the client's typed model: a field the model does not declare is refused,
    naming its path, and the round trip must give the manifest back (a value of the wrong
    shape would not)."""
    api_version, klass = KINDS[doc["kind"]]
    name = doc["metadata"]["name"]
    assert doc["apiVersion"] == api_version, (name, doc["apiVersion"])
    assert not _unknown_fields(doc, klass, doc["kind"]), (name, _unknown_fields(doc, klass, ""))
    api = k8s.ApiClient()
    model = api.deserialize(_Body(doc), klass)
    assert api.sanitize_for_serialization(model) == doc, name
    return model


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "deploy" / "k8s" / name).read_text()) if d]


def _all_docs() -> list[dict[str, Any]]:
    return [d for f in sorted((REPO / "deploy" / "k8s").glob("*.yaml")) for d in _docs(f.name)]


def _of_kind(kind: str) -> list[Any]:
    return [_model(d) for d in _all_docs() if d["kind"] == kind]


def _built(**server: Any) -> k8s.V1Pod:
    image = ImageEnvironment(strategy="image", image="registry.example.com/vllm-omni:{commit}")
    spec = pods.PodSpec.of(image, ServerConfig(model=MODEL, **server), "0" * 40)
    return pods.pod_manifest(spec, "omni-server-COMMIT")


def _servers_namespace() -> str:
    """The namespace the sandbox manifests put the server pods in (the config names it)."""
    (account,) = [a for a in _of_kind("ServiceAccount") if a.metadata.name == pods.SERVICE_ACCOUNT]
    return str(account.metadata.namespace)


def _gpu_workers() -> list[k8s.V1StatefulSet]:
    return [d for d in _of_kind("StatefulSet") if d.metadata.name.startswith("omni-gpu-worker")]


def test_the_model_check_refuses_a_misspelt_or_misplaced_field() -> None:
    """The check itself can fail: a misspelt field, and a right field at the wrong level."""
    (doc,) = _docs("server-pod-template.yaml")
    misspelt = json.loads(json.dumps(doc))
    misspelt["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
    assert _unknown_fields(misspelt, "V1Pod", "Pod") == [
        "Pod.spec.containers[0].securityContext.readOnlyRootFileSystem"
    ]
    misplaced = json.loads(json.dumps(doc))
    misplaced["spec"]["allowPrivilegeEscalation"] = False  # a container's field, on the pod
    with pytest.raises(AssertionError):
        _model(misplaced)


def test_every_manifest_is_a_valid_model_with_no_secret_in_it() -> None:
    docs = _all_docs()
    assert {d["kind"] for d in docs} == set(KINDS), {d["kind"] for d in docs} ^ set(KINDS)
    for doc in docs:
        _model(doc)
    for secret in _docs("secrets.example.yaml"):
        assert all(v == "" for v in secret["stringData"].values()), secret["metadata"]["name"]


def test_gpu_workers_take_their_lanes_queue_on_their_lanes_nodes() -> None:
    for deployment in _gpu_workers():
        pod = deployment.spec.template.spec
        worker = pod.containers[0]
        assert pod.node_selector and pod.tolerations, deployment.metadata.name
        assert worker.args[:3] == ["celery", "worker", "--queues"]
        assert worker.resources.limits.get("nvidia.com/gpu")
        assert not worker.image.endswith(":latest") and re.search(r":\d", worker.image)
        # No secret in the worker's environment (every task and child inherits it): Airflow's
        # own through `_CMD`, omni-tasks' through `_FILE`, both reading mounted files.
        for env in worker.env:
            if re.search(
                r"SECRET|FERNET|SQL_ALCHEMY|BACKEND|PASSWORD|TOKEN|BROKER|DATABASE", env.name
            ):
                assert env.name.endswith(("_CMD", "_FILE")), env.name
                assert env.value_from is None and "/var/run/secrets/" in env.value, env.name
        assert not worker.env_from, deployment.metadata.name


def test_gpu_workers_are_hardened_and_read_the_config_read_only() -> None:
    accounts = {(a.metadata.namespace, a.metadata.name): a for a in _of_kind("ServiceAccount")}
    secrets = {
        (d["metadata"]["name"], key)
        for d in _docs("secrets.example.yaml")
        for key in d["stringData"]
    }
    assert _gpu_workers()
    for deployment in _gpu_workers():
        name, pod = deployment.metadata.name, deployment.spec.template.spec
        worker = pod.containers[0]
        account = accounts[(deployment.metadata.namespace, pod.service_account_name)]
        assert account.automount_service_account_token is False, name
        assert pod.automount_service_account_token is False, name
        ctx, pod_ctx = worker.security_context, pod.security_context
        assert pod_ctx.run_as_non_root is True and pod_ctx.run_as_user, name
        assert ctx.allow_privilege_escalation is False and ctx.capabilities.drop == ["ALL"], name
        assert ctx.privileged is None and not ctx.capabilities.add, name
        seccomp = ctx.seccomp_profile or pod_ctx.seccomp_profile
        assert seccomp.type == "RuntimeDefault", name
        assert not (pod.host_network or pod.host_pid or pod.host_ipc), name

        mounts = {m.mount_path: m for m in worker.volume_mounts}
        volumes = {v.name: v for v in pod.volumes}
        srv = mounts["/srv/omni"]
        assert srv.read_only is True, name
        claim = volumes[srv.name].persistent_volume_claim
        assert claim is None or claim.read_only is True, name
        assert all(v.host_path is None for v in volumes.values()), name
        # Its one API token: projected, an hour at most, read-only where in-cluster config reads.
        token = mounts["/var/run/secrets/kubernetes.io/serviceaccount"]
        assert token.read_only is True, name
        (projected,) = [
            s.service_account_token
            for s in volumes[token.name].projected.sources
            if s.service_account_token
        ]
        assert projected.path == "token" and projected.expiration_seconds <= 3600, name

        # Every secret it reads is one the example names, and $(VAR) is defined before use.
        defined: list[str] = []
        for env in worker.env:
            for var in re.findall(r"\$\((\w+)\)", env.value or ""):
                assert var in defined, (name, env.name, var)
            ref = env.value_from and env.value_from.secret_key_ref
            assert not ref or (ref.name, ref.key) in secrets, (name, env.name)
            defined.append(env.name)
        for source in worker.env_from or ():
            assert source.secret_ref.name in {s for s, _ in secrets}, name
        # …and every secret file it mounts too.
        for volume in volumes.values():
            if volume.secret:
                assert volume.secret.secret_name in {s for s, _ in secrets}, name
            for src in volume.projected.sources if volume.projected else ():
                for item in src.secret.items if src.secret else ():
                    assert (src.secret.name, item.key) in secrets, (name, item.key)


def test_the_server_pod_template_is_what_the_image_strategy_builds() -> None:
    (doc,) = _docs("server-pod-template.yaml")
    got = k8s.ApiClient().sanitize_for_serialization(_built(gpus=2))
    got["spec"]["containers"][0]["image"] = doc["spec"]["containers"][0]["image"]
    assert got == doc


def test_a_server_pod_is_hardened_and_holds_no_token_and_no_secret() -> None:
    pod = _built(gpus=2, env={"HF_ENDPOINT": "http://omni-model-cache:8080", "HF_TOKEN": "hf_x"})
    spec = pod.spec
    (container,) = spec.containers
    assert spec.automount_service_account_token is False
    assert spec.service_account_name == pods.SERVICE_ACCOUNT
    (account,) = [a for a in _of_kind("ServiceAccount") if a.metadata.name == pods.SERVICE_ACCOUNT]
    assert account.automount_service_account_token is False
    assert not (spec.host_network or spec.host_pid or spec.host_ipc or spec.init_containers)

    ctx, pod_ctx = container.security_context, spec.security_context
    for c in (ctx, pod_ctx):
        assert c.run_as_non_root is True and c.run_as_user and c.run_as_user > 0
        assert c.seccomp_profile.type == "RuntimeDefault"
    assert ctx.allow_privilege_escalation is False and ctx.privileged is None
    assert ctx.capabilities.drop == ["ALL"] and not ctx.capabilities.add
    assert ctx.read_only_root_filesystem is True

    # Writable only where it must be: every volume an emptyDir, /tmp and the cache among them.
    assert all(
        {k for k, x in v.to_dict().items() if x is not None} == {"name", "empty_dir"}
        for v in spec.volumes
    )
    mounts = {m.mount_path for m in container.volume_mounts}
    assert {"/tmp", pods.CACHE_DIR} <= mounts
    env = {e.name: e for e in container.env}
    assert env["HOME"].value == pods.CACHE_DIR and env["HF_ENDPOINT"].value
    assert "HF_TOKEN" not in env  # a secret-named variable never passes, even from the config
    assert not container.env_from
    assert all(e.value_from is None or e.value_from.secret_key_ref is None for e in env.values())
    assert env["POD_IP"].value_from.field_ref.field_path == "status.podIP"


# --- the Role: exactly the API calls pods.py makes, as the fake API server records them ---


class _Recording:
    """ASGI middleware: each request as (method, path, query)."""

    def __init__(self, app: Callable[..., Any], calls: list[tuple[str, str, str]]) -> None:
        self.app, self.calls = app, calls

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.calls.append((scope["method"], scope["path"], scope["query_string"].decode()))
        await self.app(scope, receive, send)


def _rbac(method: str, path: str, query: str) -> tuple[str, str, str]:
    """The (apiGroup, resource, verb) RBAC checks for a namespaced request, as the API server's
    request info derives it."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[parts.index("namespaces") + 2 :]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    if method == "GET":
        verb = "watch" if re.search(r"(^|&)watch=(true|1)", query) else "get" if named else "list"
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}[method]
    return group, resource, verb


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Call = tuple[str, str, str]


@pytest.fixture
def recorded_calls() -> Iterator[tuple[KubeState, k8s.CoreV1Api, list[Call]]]:
    state, calls = KubeState(), list[Call]()
    app = kube_app(state)
    app.add_middleware(_Recording, calls=calls)
    with serve_in_thread(app) as url:
        yield state, k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=url))), calls


def test_the_workers_role_allows_exactly_the_calls_pods_py_makes(
    recorded_calls: tuple[KubeState, k8s.CoreV1Api, list[Call]],
) -> None:
    state, api, calls = recorded_calls
    namespace = _servers_namespace()
    # A pod that becomes ready, and one that ends first: every path pods.py has.
    spec = pods.PodSpec.of(
        ImageEnvironment(
            strategy="image", image="registry.example/vllm-omni:{commit}", namespace=namespace
        ),
        ServerConfig(model="m", port=_free_port(), startup_timeout_s=20),
        "a" * 40,
    )
    with pods.launched_pod(spec, api) as running:
        assert running.namespace == namespace
    state.phase = "Failed"
    with pytest.raises(pods.PodStartError), pods.launched_pod(spec, api):
        pass
    assert {p.split("/")[4] for _, p, _ in calls} == {namespace}
    made = {_rbac(*call) for call in calls}
    assert made == {("", "pods", "create"), ("", "pods", "get"), ("", "pods", "delete")}

    (role,) = [r for r in _of_kind("Role") if r.metadata.namespace == namespace]
    allowed = {
        (g, r, v)
        for rule in role.rules
        for g in rule.api_groups
        for r in rule.resources
        for v in rule.verbs
    }
    assert allowed == made, allowed ^ made

    # Bound to the GPU workers' account, and to nothing else.
    (binding,) = [b for b in _of_kind("RoleBinding") if b.role_ref.name == role.metadata.name]
    assert binding.metadata.namespace == namespace and binding.role_ref.kind == "Role"
    workers = {
        (d.metadata.namespace, d.spec.template.spec.service_account_name) for d in _gpu_workers()
    }
    assert {(s.namespace, s.name) for s in binding.subjects} == workers
    assert all(s.kind == "ServiceAccount" for s in binding.subjects)


def test_the_servers_namespace_holds_no_secret_and_enforces_restricted_pods() -> None:
    namespace = _servers_namespace()
    (ns,) = [n for n in _of_kind("Namespace") if n.metadata.name == namespace]
    assert ns.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert all(s.metadata.namespace != namespace for s in _of_kind("Secret"))
    assert namespace not in {d.metadata.namespace for d in _gpu_workers()}


def _selects(selector: k8s.V1LabelSelector | None, labels: dict[str, str]) -> bool:
    assert selector is not None and not selector.match_expressions
    return (selector.match_labels or {}).items() <= labels.items()


def test_network_policies_fence_the_server_pods() -> None:
    """A server pod as pods.py labels it: denied by default; in, only the GPU worker pods on
    the serving port; out, only the cluster DNS and the model cache."""
    labels = _built(gpus=2).metadata.labels
    namespace = _servers_namespace()
    policies = [
        p
        for p in _of_kind("NetworkPolicy")
        if p.metadata.namespace == namespace and _selects(p.spec.pod_selector, labels)
    ]
    assert any(
        set(p.spec.policy_types) == {"Ingress", "Egress"}
        and not p.spec.ingress
        and not p.spec.egress
        for p in policies
    ), "no default-deny for the server pods"

    worker_namespaces = {d.metadata.namespace for d in _gpu_workers()}
    worker_labels = [d.spec.template.metadata.labels for d in _gpu_workers()]
    ingress = [r for p in policies for r in p.spec.ingress or ()]
    assert ingress
    for rule in ingress:
        assert rule._from and rule.ports, "an ingress rule without peers or ports admits all"
        assert [(x.protocol, x.port) for x in rule.ports] == [("TCP", ServerConfig().port)]
        for peer in rule._from:
            assert peer.ip_block is None
            (ns,) = peer.namespace_selector.match_labels.items()
            assert ns[0] == "kubernetes.io/metadata.name" and ns[1] in worker_namespaces
            assert all(_selects(peer.pod_selector, w) for w in worker_labels)

    egress = [r for p in policies for r in p.spec.egress or ()]
    dns: list[k8s.V1NetworkPolicyEgressRule] = []
    other: list[k8s.V1NetworkPolicyEgressRule] = []
    for rule in egress:
        assert rule.to and rule.ports, "an egress rule without peers or ports allows all"
        for peer in rule.to:
            assert peer.ip_block is None and peer.namespace_selector and peer.pod_selector
        is_dns = any(p.pod_selector.match_labels == {"k8s-app": "kube-dns"} for p in rule.to)
        (dns if is_dns else other).append(rule)
    assert {(x.protocol, x.port) for r in dns for x in r.ports} == {("UDP", 53), ("TCP", 53)}
    (cache,) = other  # the model cache the config names, and nothing else
    (peer,) = cache.to
    assert "model-cache" in peer.pod_selector.match_labels["app.kubernetes.io/name"]


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
    named.add(values["redis"]["passwordSecretName"])
    assert named <= secrets, named - secrets  # every Secret the values name is in the example


def test_redis_has_a_password_and_every_broker_url_is_built_from_it() -> None:
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    redis = values["redis"]
    assert redis["enabled"] is True and "password" not in redis
    assert "brokerUrlSecretName" not in values["data"] and "brokerUrl" not in values["data"]
    # The chart's own broker-URL variable (from a second secret) is off; ours reads the password.
    assert values["enableBuiltInSecretEnvVars"]["AIRFLOW__CELERY__BROKER_URL"] is False
    chart_env = yaml.safe_load(values["extraEnv"])
    names = [e["name"] for e in chart_env]
    password = chart_env[names.index("REDIS_PASSWORD")]
    assert password["valueFrom"]["secretKeyRef"] == {
        "name": redis["passwordSecretName"],
        "key": "password",  # the key the chart's Redis reads
    }
    broker = chart_env[names.index("AIRFLOW__CELERY__BROKER_URL")]["value"]
    assert names.index("REDIS_PASSWORD") < names.index("AIRFLOW__CELERY__BROKER_URL")
    assert re.fullmatch(r"redis://:\$\(REDIS_PASSWORD\)@omni-redis:6379/\d+", broker)
    for deployment in _gpu_workers():
        pod = deployment.spec.template.spec
        env = {e.name: e for e in pod.containers[0].env}
        # The same URL, the password read from its mounted file when Airflow needs it.
        mounted = {
            (src.secret.name, item.key): f"{mount.mount_path}/{item.path}"
            for mount in pod.containers[0].volume_mounts
            for volume in pod.volumes
            if volume.name == mount.name and volume.projected
            for src in volume.projected.sources
            if src.secret
            for item in src.secret.items
        }
        path = mounted[(redis["passwordSecretName"], "password")]
        template = broker.replace("$(REDIS_PASSWORD)", "%s")
        cmd = env["AIRFLOW__CELERY__BROKER_URL_CMD"].value
        assert cmd == f"sh -c 'printf {template} \"$(cat {path})\"'", deployment.metadata.name


# --- the GPU workers keep their logs, their audio and their running task ---


def _nightly_longest_timeout() -> dt.timedelta:
    """The longest execution_timeout of any task of the nightly DAG as it is built (the GPU
    tasks: their lane's execution_timeout_s)."""
    import os

    from airflow.dag_processing.dagbag import DagBag

    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    bag = DagBag(dag_folder=str(REPO / "dags" / "omni_nightly.py"))
    assert bag.import_errors == {}
    nightly = bag.dags["omni_nightly"]
    return max(t.execution_timeout for t in nightly.tasks if t.execution_timeout)


def _env(worker: k8s.V1Container) -> dict[str, k8s.V1EnvVar]:
    return {e.name: e for e in worker.env}


def _mounted_secret_files(pod: k8s.V1PodSpec) -> dict[str, tuple[str, str]]:
    """Each file a projected or plain secret volume puts in the worker: path -> (secret, key)."""
    files: dict[str, tuple[str, str]] = {}
    volumes = {v.name: v for v in pod.volumes}
    for mount in pod.containers[0].volume_mounts:
        volume = volumes.get(mount.name)  # else a volumeClaimTemplate's (the logs)
        if volume is None:
            continue
        sources = [s.secret for s in volume.projected.sources] if volume.projected else []
        for src in sources:
            for item in (src.items or []) if src else []:
                files[f"{mount.mount_path}/{item.path}"] = (src.name, item.key)
    return files


def test_gpu_workers_are_a_statefulset_behind_a_headless_service_serving_logs() -> None:
    services = {(s.metadata.namespace, s.metadata.name): s for s in _of_kind("Service")}
    for workers in _gpu_workers():
        name, pod = workers.metadata.name, workers.spec.template.spec
        service = services[(workers.metadata.namespace, workers.spec.service_name)]
        assert service.spec.cluster_ip == "None", name  # headless: <pod>.<service> resolves
        assert _selects(
            k8s.V1LabelSelector(match_labels=service.spec.selector),
            workers.spec.template.metadata.labels,
        ), name
        # The log server's port: what the worker serves, the Service publishes, readiness checks.
        worker = pod.containers[0]
        (port,) = [p for p in worker.ports if p.name == "worker-logs"]
        env = _env(worker)
        assert int(env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"].value) == port.container_port
        assert [(p.port, p.target_port) for p in service.spec.ports] == [
            (port.container_port, port.container_port)
        ], name
        # Its logs on a volume of its own per pod, where Airflow writes them.
        (claim,) = workers.spec.volume_claim_templates
        (logs,) = [m for m in worker.volume_mounts if m.name == claim.metadata.name]
        assert logs.mount_path == "/opt/airflow/logs", name  # AIRFLOW_HOME of Dockerfile.gpu


def test_gpu_workers_verify_log_tokens_with_the_charts_api_secret_key() -> None:
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    for workers in _gpu_workers():
        pod = workers.spec.template.spec
        env = _env(pod.containers[0])
        cmd = env["AIRFLOW__API__SECRET_KEY_CMD"].value
        (path,) = re.fullmatch(r"cat (\S+)", cmd).groups()
        # The file is the chart's Secret (apiSecretKeySecretName, key api-secret-key).
        assert _mounted_secret_files(pod)[path] == (
            values["apiSecretKeySecretName"],
            "api-secret-key",
        ), workers.metadata.name
        assert "AIRFLOW__API__SECRET_KEY" not in env  # never the key itself in the environment


def test_gpu_workers_write_audio_to_the_store_every_chart_pod_reads() -> None:
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    (chart_root,) = [e["value"] for e in values["env"] if e["name"] == "OMNI_AUDIO_ROOT"]
    assert re.match(r"^[a-z][a-z0-9+]*://", chart_root) and not chart_root.startswith("file:")
    for workers in _gpu_workers():
        pod = workers.spec.template.spec
        env = _env(pod.containers[0])
        assert env["OMNI_AUDIO_ROOT"].value == chart_root, workers.metadata.name
        home = env["OMNI_HOME"].value  # pod-local scratch; the audio root is never under it
        assert not chart_root.startswith(home)


def _shutdown_and_probe_problems(workers: k8s.V1StatefulSet, longest: dt.timedelta) -> list[str]:
    """Why a GPU worker would kill a running nightly task on a rollout or go unwatched."""
    pod, problems = workers.spec.template.spec, []
    if (pod.termination_grace_period_seconds or 30) < longest.total_seconds():
        problems.append(f"grace period under the nightly's longest task ({longest})")
    worker = pod.containers[0]
    # Liveness: the chart's check, the worker's Celery node answering a ping.
    live = worker.liveness_probe
    script = " ".join(live._exec.command) if live and live._exec else ""
    if not re.search(
        r"celery --app \S+celery_executor\.app inspect ping -d \"?celery@\$\(hostname\)", script
    ):
        problems.append("no liveness probe pinging the worker's Celery node")
    elif live.failure_threshold * live.period_seconds < 300:
        problems.append("a liveness probe that restarts the worker on a short blip")
    # Readiness: the log server answers (the Service then publishes the pod's name).
    ready = worker.readiness_probe
    if not (ready and ready.tcp_socket and ready.tcp_socket.port in ("worker-logs", 8793)):
        problems.append("no readiness probe on the log server")
    return problems


def test_gpu_workers_outlast_the_nightlys_longest_task_and_are_probed() -> None:
    longest = _nightly_longest_timeout()
    assert longest >= dt.timedelta(hours=6)  # a GPU task of the nightly, not a CPU one
    assert _gpu_workers()
    for workers in _gpu_workers():
        assert _shutdown_and_probe_problems(workers, longest) == [], workers.metadata.name


def test_the_worker_checks_fail_a_worker_that_loses_logs_or_its_running_task() -> None:
    """The checks above can fail: a Deployment (no stable name), the chart's default grace
    period, no probes."""
    (doc,) = [d for d in _docs("gpu-workers.yaml") if d["kind"] == "StatefulSet"]
    as_deployment = json.loads(json.dumps(doc))
    as_deployment["kind"] = "Deployment"
    with pytest.raises(KeyError):
        _model(as_deployment)  # not a kind the manifests may use any more
    bad = json.loads(json.dumps(doc))
    bad["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 600
    container = bad["spec"]["template"]["spec"]["containers"][0]
    del container["readinessProbe"]
    container["livenessProbe"]["exec"]["command"][2] = "exec true"
    assert _shutdown_and_probe_problems(_model(bad), _nightly_longest_timeout()) == [
        "grace period under the nightly's longest task (6:30:00)",
        "no liveness probe pinging the worker's Celery node",
        "no readiness probe on the log server",
    ]
    misplaced = json.loads(json.dumps(doc))
    misplaced["spec"]["terminationGracePeriodSeconds"] = 24000  # the pod's field, on the set
    assert _unknown_fields(misplaced, "V1StatefulSet", "StatefulSet") == [
        "StatefulSet.spec.terminationGracePeriodSeconds"
    ]
