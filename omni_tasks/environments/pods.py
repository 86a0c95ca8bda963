"""Servers from images: for lanes whose stack ships as a container (vLLM-Omni's AMD and NPU CI
do), the commit's image runs `vllm serve` as a Kubernetes pod. The pod asks for the lane's
accelerator resource (`nvidia.com/gpu`, `amd.com/gpu`, the Ascend device plugin's
`huawei.com/Ascend910`), is ready when `/health` answers, is streamed to from the worker over
the pod network, and is deleted afterwards, whatever happened.

The pod spec is built from the `kubernetes` client's models; the cluster is the in-cluster one
on a worker that runs in Kubernetes, else the kubeconfig's (`KUBECONFIG`).

The commit under test runs here, never in the worker: the pod runs as the `omni-server` service
account without its token, holds no secret (none mounted, none in its environment: a
secret-named variable of the config's `server.env` never passes), runs non-root without
capabilities or privilege escalation under the runtime's seccomp profile, on a read-only root
filesystem with `/tmp` and a cache directory as its only writable places, and carries the label
the NetworkPolicies of deploy/k8s/server-sandbox.yaml select (ingress from the GPU worker only,
egress to DNS and the model cache only). The worker's Role there allows exactly the calls made
here: create, get and delete pods.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from omni_tasks.deployment.schema import ImageEnvironment, ServerConfig
from omni_tasks.trust.redact import SECRET_NAME

# An image reference as the config gives it, `{commit}` filled in with the run's SHA.
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
NON_ROOT_UID = 1000
SERVICE_ACCOUNT = "omni-server"  # deploy/k8s/server-sandbox.yaml: no token automounted
# What the NetworkPolicies select (deploy/k8s/server-sandbox.yaml): a server pod, by this label.
SERVER_LABELS = {"app.kubernetes.io/managed-by": "omni-tasks", "omni-tasks/role": "server"}
# The writable places on the read-only root filesystem: emptyDirs, gone with the pod. The cache
# is the server's home (vLLM's, Triton's and the Hub's caches); /dev/shm is NCCL's, in memory.
TMP_DIR = "/tmp"
CACHE_DIR = "/cache"
SHM_SIZE = "8Gi"
FAILED_PHASES = ("Failed", "Succeeded")  # a server pod that ended never becomes ready


class PodStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class PodSpec:
    image: str  # the image reference, `{commit}` already filled in
    namespace: str
    server: ServerConfig  # the model, accelerators, environment, startup timeout and port
    extra_args: tuple[str, ...] = ()

    @classmethod
    def of(cls, env: ImageEnvironment, server: ServerConfig, commit: str) -> PodSpec:
        """The pod of a commit's image, as the deployment config's environment and server say."""
        image = env.image.replace("{commit}", commit)
        if not _IMAGE.match(image) or "{" in image:
            raise ValueError(f"environment.image: {image[:80]!r} is not an image reference")
        return cls(image=image, namespace=env.namespace, server=server)


def pod_manifest(spec: PodSpec, name: str) -> client.V1Pod:
    """The server pod: one container running `vllm serve MODEL --omni` on the port, the lane's
    accelerators as limits, readiness on `/health`, never restarted (a crash is a failed run,
    not a loop). Namespace, resources, port and timeouts come from the deployment config only
    (a trigger form cannot name them); the pod holds no service-account token and no secret,
    and runs hardened (the module docstring)."""
    probe = client.V1Probe(
        http_get=client.V1HTTPGetAction(path="/health", port=spec.server.port),
        period_seconds=5,
        failure_threshold=3,
    )
    # The writable places (TMP_DIR above): name -> (mount path, emptyDir source).
    scratch = {
        "tmp": (TMP_DIR, client.V1EmptyDirVolumeSource()),
        "cache": (CACHE_DIR, client.V1EmptyDirVolumeSource()),
        "shm": ("/dev/shm", client.V1EmptyDirVolumeSource(medium="Memory", size_limit=SHM_SIZE)),
    }
    container = client.V1Container(
        name="vllm-omni",
        image=spec.image,
        command=["vllm", "serve", spec.server.model, "--omni"],
        # Listens on the pod's own IP (the downward API's, expanded by Kubernetes in args):
        # what the worker and the readiness probe reach, and nothing else.
        args=["--host", "$(POD_IP)", "--port", str(spec.server.port), *spec.extra_args],
        ports=[client.V1ContainerPort(container_port=spec.server.port, name="http")],
        env=[
            client.V1EnvVar(
                name="POD_IP",
                value_from=client.V1EnvVarSource(
                    field_ref=client.V1ObjectFieldSelector(field_path="status.podIP")
                ),
            ),
            *(client.V1EnvVar(name=k, value=v) for k, v in sorted(_server_env(spec).items())),
        ],
        resources=client.V1ResourceRequirements(
            limits={spec.server.gpu_resource: str(spec.server.gpus)}
        ),
        readiness_probe=probe,
        # The commit under test is untrusted: no root, no privilege escalation, no capabilities,
        # the runtime's seccomp profile, and nothing written outside its emptyDirs.
        security_context=client.V1SecurityContext(
            run_as_non_root=True,
            run_as_user=NON_ROOT_UID,
            allow_privilege_escalation=False,
            capabilities=client.V1Capabilities(drop=["ALL"]),
            read_only_root_filesystem=True,
            seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"),
        ),
        volume_mounts=[client.V1VolumeMount(name=n, mount_path=m) for n, (m, _) in scratch.items()],
    )
    return client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=client.V1ObjectMeta(name=name, labels=dict(SERVER_LABELS)),
        spec=client.V1PodSpec(
            containers=[container],
            restart_policy="Never",
            # Its own account, whose token never reaches the server container.
            service_account_name=SERVICE_ACCOUNT,
            automount_service_account_token=False,
            enable_service_links=False,
            security_context=client.V1PodSecurityContext(
                run_as_non_root=True,
                run_as_user=NON_ROOT_UID,
                run_as_group=NON_ROOT_UID,
                seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"),
            ),
            volumes=[client.V1Volume(name=n, empty_dir=src) for n, (_, src) in scratch.items()],
        ),
    )


def _server_env(spec: PodSpec) -> dict[str, str]:
    """The server's environment: its home and temp dir on the writable emptyDirs, then the
    config's `server.env` (trusted) less any secret-named variable, as for a child on the
    worker (trust/child_env.py). POD_IP is the downward API's, never the config's."""
    env = {"HOME": CACHE_DIR, "XDG_CACHE_HOME": CACHE_DIR, "TMPDIR": TMP_DIR, **spec.server.env}
    return {k: v for k, v in env.items() if k != "POD_IP" and not SECRET_NAME.search(k)}


def core_api() -> client.CoreV1Api:
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return client.CoreV1Api()


@dataclass(frozen=True)
class RunningPod:
    url: str
    name: str
    namespace: str
    image: str


@contextmanager
def launched_pod(spec: PodSpec, api: client.CoreV1Api | None = None) -> Iterator[RunningPod]:
    """Create the server pod, wait for its IP and `/health`, yield it, delete it."""
    api = api or core_api()
    name = f"omni-serve-{uuid.uuid4().hex[:10]}"
    try:
        api.create_namespaced_pod(spec.namespace, pod_manifest(spec, name))
    except ApiException as exc:
        raise PodStartError(f"pod {name} was not created: {exc.status} {exc.reason}") from None
    try:
        url = _wait_ready(api, spec, name)
        yield RunningPod(url, name, spec.namespace, spec.image)
    finally:
        try:
            api.delete_namespaced_pod(name, spec.namespace, grace_period_seconds=30)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _wait_ready(api: client.CoreV1Api, spec: PodSpec, name: str) -> str:
    timeout = spec.server.startup_timeout_s
    deadline = time.monotonic() + timeout
    phase = "unknown"
    while time.monotonic() < deadline:
        pod = api.read_namespaced_pod(name, spec.namespace)
        phase = (pod.status.phase if pod.status else None) or "Pending"
        if phase in FAILED_PHASES:
            raise PodStartError(f"pod {name} ({spec.image}) ended ({phase}) before it was ready")
        ip = pod.status.pod_ip if pod.status else None
        if phase == "Running" and ip:
            url = f"http://{ip}:{spec.server.port}"
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass  # not listening yet
        time.sleep(1.0)
    raise PodStartError(
        f"pod {name} ({spec.image}) not healthy after {timeout:g} s (phase {phase})"
    )
