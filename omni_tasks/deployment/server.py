"""How a `vllm-serve` target's server is launched: the config's `server:` (ServerConfig) and
`environment:` (one of three strategies, by `strategy`). Every default of a launched server is
a field default here; the launchers (environments/, synthesis/server.py) take values, never
defaults of their own."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from omni_tasks.series import DEFAULT_MODEL

# A server's environment variable: YAML may spell a value as a number; the process gets text.
EnvValue = Annotated[str, BeforeValidator(str)]
# A device plugin's resource name: nvidia.com/gpu, amd.com/gpu, huawei.com/Ascend910.
GPU_RESOURCE = r"^[a-z0-9.-]+/[A-Za-z0-9._-]+$"


class ServerConfig(BaseModel):
    """The config's `server:` section (a lane supplies gpus and gpu_resource when the series
    names none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = DEFAULT_MODEL
    deploy_config: str | None = None
    gpus: int = Field(default=2, ge=0, le=64, description="GPUs one server takes")
    # The accelerator a server pod asks for (environment.strategy image); its vendor names the
    # platform a deploy is served for (synthesis/stages.py).
    gpu_resource: str = Field(default="nvidia.com/gpu", pattern=GPU_RESOURCE)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    startup_timeout_s: float = Field(default=1200.0, gt=0)
    # The image strategy's pod port: the one deploy/k8s/server-sandbox.yaml's policies allow.
    port: int = Field(default=8091, ge=1, le=65535)


class _Environment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    vllm: str | None = Field(
        default=None, description="A vLLM build (a version or a commit), installed last (venv)"
    )

    def paths(self) -> dict[str, object]:
        """What names a file on the GPU worker (each must lie under a trusted root)."""
        return {}

    def missing(self) -> tuple[str, str] | None:
        """(field, why) when no server can be launched from this environment as given."""
        return None


class ExistingEnvironment(_Environment):
    """An interpreter someone else manages (environments/existing.py)."""

    strategy: Literal["existing"] = "existing"
    python: str = "python3"

    def paths(self) -> dict[str, object]:
        return {} if self.python in ("python", "python3") else {"environment.python": self.python}


class VenvEnvironment(_Environment):
    """A virtualenv per commit from a checkout of `repo` (environments/venv.py)."""

    strategy: Literal["venv"]
    repo: str | None = None
    root: str | None = Field(default=None, description="Where environments live (OMNI_HOME/envs)")
    requirements: tuple[str, ...] = ()
    vllm_index: str | None = None

    def paths(self) -> dict[str, object]:
        paths: dict[str, object] = {"environment.repo": self.repo, "environment.root": self.root}
        if self.vllm_index is not None and not self.vllm_index.startswith(("https://", "http://")):
            paths["environment.vllm_index"] = self.vllm_index
        for i, req in enumerate(self.requirements):
            if req.startswith("-"):
                raise ValueError(f"environment.requirements[{i}]: pip options are not accepted")
            if "/" in req or req.startswith("."):
                paths[f"environment.requirements[{i}]"] = req
        return paths

    def missing(self) -> tuple[str, str] | None:
        if self.repo:
            return None
        return "environment.repo", "the venv strategy needs the repo to install from"


class ImageEnvironment(_Environment):
    """The commit's image as a Kubernetes pod (environments/pods.py)."""

    strategy: Literal["image"]
    image: str = Field(default="", description="The image reference, {commit} for the SHA")
    namespace: str = "default"

    def missing(self) -> tuple[str, str] | None:
        if "{commit}" in self.image:
            return None
        return "environment.image", (
            "the image strategy needs the image reference, with {commit} for the SHA "
            '(e.g. "registry/vllm-omni:{commit}")'
        )


def strategy(value: object) -> object:
    """An environment's strategy: `existing` when the config names none."""
    if isinstance(value, dict):
        return value.get("strategy", "existing")
    return getattr(value, "strategy", None)


Environment = Annotated[
    Annotated[ExistingEnvironment, Tag("existing")]
    | Annotated[VenvEnvironment, Tag("venv")]
    | Annotated[ImageEnvironment, Tag("image")],
    Discriminator(strategy),
]
