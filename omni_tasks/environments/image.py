"""`image`: the container image the upstream CI builds per commit, run as a Kubernetes pod.

The pod spec is rendered as KubernetesPodOperator arguments (cncf-kubernetes provider): the GPUs
requested, the shared model-weights cache volume, environment, and timeouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from omni_tasks.environments import Environment, EnvironmentBuildError


@dataclass(frozen=True)
class ImageStrategy:
    tag_template: str  # e.g. "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:{commit}"
    namespace: str = "omni-tasks"
    weights_claim: str = "hf-weights-cache"
    weights_mount: str = "/root/.cache/huggingface"
    gpu_resource: str = "nvidia.com/gpu"
    node_selector: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: int = 1200
    name: str = "image"

    def prepare(self, commit: str) -> Environment:
        if "{commit}" not in self.tag_template:
            raise EnvironmentBuildError(
                f"image tag template {self.tag_template!r} has no {{commit}}"
            )
        return Environment(commit, self.name, image=self.tag_template.format(commit=commit))

    def pod_operator_kwargs(
        self, env: Environment, command: Sequence[str], gpus: int, extra_env: dict[str, str]
    ) -> dict[str, Any]:
        """KubernetesPodOperator arguments running `command` in the commit's image."""
        from kubernetes.client import models as k8s

        if env.image is None:
            raise EnvironmentBuildError("not an image environment")
        return {
            "namespace": self.namespace,
            "image": env.image,
            "name": f"omni-bench-{env.commit[:12]}",
            "cmds": [command[0]],
            "arguments": list(command[1:]),
            "env_vars": [k8s.V1EnvVar(name=k, value=v) for k, v in sorted(extra_env.items())],
            "container_resources": k8s.V1ResourceRequirements(
                limits={self.gpu_resource: str(gpus)}, requests={self.gpu_resource: str(gpus)}
            ),
            "volumes": [
                k8s.V1Volume(
                    name="weights",
                    persistent_volume_claim=k8s.V1PersistentVolumeClaimVolumeSource(
                        claim_name=self.weights_claim
                    ),
                )
            ],
            "volume_mounts": [k8s.V1VolumeMount(name="weights", mount_path=self.weights_mount)],
            "node_selector": dict(self.node_selector),
            "startup_timeout_seconds": self.startup_timeout_s,
            "labels": {"app": "omni-tasks", "commit": env.commit[:40]},
            "get_logs": True,
            "on_finish_action": "delete_pod",
        }
