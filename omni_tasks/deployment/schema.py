"""The deployment config's schema: one series' fields (NightlyParams), how a `vllm-serve`
target is launched (Serving) with its `server:` (ServerConfig) and `environment:` (one of three
strategies, by `strategy`), and the parts they hold. Every default of a launched server is a
field default here; the launchers (environments/, synthesis/server.py) take values, never
defaults of their own. Light to import: the DAG files read it when they are parsed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from omni_tasks.config import get_settings
from omni_tasks.contracts import JsonObject
from omni_tasks.contracts.rerun import RERUN_SEED_BASE
from omni_tasks.gates.table import Threshold, UpstreamGate
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.trust.commits import full_commit
from omni_tasks.trust.names import (
    check_branch,
    check_env_name,
    check_model,
    check_name,
    check_text,
    require_trusted,
)

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
    gpus: int = Field(default=2, ge=0, le=64)  # GPUs one server takes
    # The accelerator a server pod asks for (environment.strategy image); its vendor names the
    # platform a deploy is served for (synthesis/stages.py).
    gpu_resource: str = Field(default="nvidia.com/gpu", pattern=GPU_RESOURCE)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    startup_timeout_s: float = Field(default=1200.0, gt=0)
    # The image strategy's pod port: the one deploy/k8s/server-sandbox.yaml's policies allow.
    port: int = Field(default=8091, ge=1, le=65535)


class _Environment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    vllm: str | None = None  # a vLLM build (a version or a commit), installed last (venv)

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
    root: str | None = None  # where environments live (OMNI_HOME/envs)
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
    image: str = ""  # the image reference, {commit} for the SHA
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


class GateOverride(BaseModel):
    """A series' own upstream gate (replacing the gate table's): e.g. a lane whose CI does not
    import the H100 thresholds."""

    model_config = ConfigDict(extra="forbid")
    figure: str = Field(pattern=r"^[a-z0-9_]{1,80}$")
    comparator: Literal["<=", ">="]
    threshold: float = Field(allow_inf_nan=False)
    source: str = Field(default="the deployment config", max_length=200)
    constant: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,80}$")


class UrlTarget(BaseModel):
    """A serving vLLM-Omni by URL, with the deploy yaml it runs (its stage defaults let the run
    seed reach every stage; without it no per-stage seed is sent)."""

    model_config = ConfigDict(extra="forbid")
    url: str
    deploy_config: str | None = None


# GPU one bisection or ablation may use, in full-run equivalents (clips run / clips).
GpuBudget = Annotated[float, Field(gt=0, le=100)]


class AutoBisect(BaseModel):
    """Bisect a confirmed regression's commit range automatically, within a GPU budget."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = False
    budget: GpuBudget = 4.0


class Serving(BaseModel):
    """How a `vllm-serve` target is launched per commit (the nightly's and the bisect's): the
    commit's environment, the server settings, deploy overrides, and the repo. Every value that
    names a path or an executable run on the GPU worker must lie under a trusted root
    (OMNI_TRUSTED_ROOTS), so a trigger form cannot point the worker at any file."""

    repo: str | None = None  # the git repo to read branch heads from
    overrides: dict[str, Any] = Field(default_factory=dict)
    environment: Environment = Field(default_factory=ExistingEnvironment)
    server: ServerConfig = Field(default_factory=ServerConfig)
    lane: str = DEFAULT_LANE  # the hardware lane the runs are on
    # The benchmark family's own run options (Benchmark.options), each given as a field of its
    # own name, as configs and forms always gave them.
    options: JsonObject = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _family_options(cls, data: Any) -> Any:
        from omni_tasks import benchmarks

        if not isinstance(data, dict):
            return data
        named = benchmarks.form_options()
        given = {k: v for k, v in data.items() if k in named}
        rest = {k: v for k, v in data.items() if k not in named}
        return {**rest, "options": {**(data.get("options") or {}), **given}}

    @model_validator(mode="after")
    def _own_options(self) -> Serving:
        """The series' family keeps its own (a fleet's defaults and form apply to all)."""
        from omni_tasks import benchmarks

        if self.bench in benchmarks.ids():
            family, others = benchmarks.get(self.bench), benchmarks.form_options()
            mine = {k: v for k, v in self.options.items() if k in family.options or k not in others}
            family.check_options(mine)
            self.options = mine
        return self

    @property
    def bench(self) -> str:
        return str(getattr(self, "benchmark", None) or get_settings().benchmark)

    @property
    def series(self) -> Series:
        """Model × benchmark × lane: the model is the one the server serves (`server.model`)."""
        return Series(self.bench, self.server.model, self.lane)

    @property
    def commit_repo(self) -> str | None:
        """Where a short SHA from the form is resolved (the heads repo, else the env's)."""
        env = self.environment
        return self.repo or (env.repo if isinstance(env, VenvEnvironment) else None)

    def check_serving(self) -> None:
        """What names a process on the GPU worker: the model is a name or a trusted path,
        never an option; the server's environment is NAME=text; the environment says what
        its strategy needs."""
        check_model(self.server.model)
        for key, value in self.server.env.items():
            check_env_name(key, "server.env")
            check_text(value, f"server.env.{key}", max_len=4096)
        paths = {"repo": self.repo, "server.deploy_config": self.server.deploy_config}
        for what, path in {**paths, **self.environment.paths()}.items():
            if path is not None:
                require_trusted(str(path), what)
        if (missing := self.environment.missing()) is not None:
            raise ValueError("{}: {}".format(*missing))

    def check_run_fields(self, branches: Sequence[str], variant: str, dataset: str) -> None:
        """A form's branches, variant and dataset (they become keys and paths), its serving
        fields, and its series (a nightly's, a bisect's, an ablation's)."""
        for branch in branches:
            check_branch(branch)
        check_name(variant, "variant")
        if "/" in dataset or dataset.startswith("."):
            require_trusted(dataset, "dataset")
        self.check_serving()
        self.series  # noqa: B018 (a property that checks benchmark, model and lane)


class NightlyParams(Serving):
    """What a nightly (or a manual run of it) benchmarks: the deployment config's fields, which
    the trigger form may override (omni_tasks.deployment)."""

    model_config = ConfigDict(extra="forbid")
    branches: list[str] = Field(default_factory=lambda: ["main", "rebase"])
    baseline: str = "main"
    commits: dict[str, str] = Field(default_factory=dict)  # branch → explicit commit
    # branch → vllm-serve, http(s)://…, {url, deploy_config} or simulator:PROFILE
    targets: dict[str, str | UrlTarget] = Field(default_factory=dict)
    variant: str = "default"
    # Below the same-morning re-run's seeds (contracts/rerun.py RERUN_SEED_BASE), which must
    # never repeat a nightly's draw.
    seeds: list[Annotated[int, Field(lt=RERUN_SEED_BASE)]] = Field(default_factory=lambda: [42])
    limit: int | None = Field(default=None, ge=1)  # unset: every item
    dataset: str = "demo"
    benchmark: str | None = None
    grader: dict[str, Any] = Field(default_factory=dict)
    # A GPU task (one branch × seed) stops after this.
    gpu_task_timeout_s: float = Field(default=6 * 3600, gt=0)
    auto_bisect: AutoBisect = Field(default_factory=AutoBisect)
    # Gate speaker similarity too (a paired per-clip test beyond this margin), for series
    # whose upstream gate gates it.
    sim_margin: float | None = Field(default=None, gt=0, lt=1)
    # Concurrency invariance each night: levels, 1 first (e.g. [1, 8]); each branch's items
    # are sent alone and co-batched and paired (omni-tasks concurrency).
    concurrency: list[int] | None = None
    # seed-TTS audio series: reference voices mixed in the concurrency check.
    concurrency_voices: int = Field(default=1, ge=1, le=5)
    # The series' upstream gates instead of the gate table's (`none`: it has none).
    upstream_gate: list[GateOverride] | Literal["none"] | None = None

    def upstream_gates(self) -> list[UpstreamGate] | None:
        """The configured gates (an empty list for `none`), or None to use the gate table."""
        if self.upstream_gate is None:
            return None
        if self.upstream_gate == "none":
            return []
        s = self.series
        return [
            UpstreamGate(
                s.benchmark,
                s.model,
                g.figure,
                g.comparator,
                (Threshold(g.threshold, None, g.source),),
                g.constant,
            )
            for g in self.upstream_gate
        ]

    def target_url(self, branch: str) -> str:
        target = self.targets[branch]
        return target.url if isinstance(target, UrlTarget) else target

    def target_deploy_config(self, branch: str) -> str | None:
        target = self.targets.get(branch)
        return target.deploy_config if isinstance(target, UrlTarget) else None

    @model_validator(mode="after")
    def _checked(self) -> NightlyParams:
        """Trigger-form values are data: branch names must be git branch names, and paths must
        lie under a trusted root (see Serving)."""
        branches = {*self.branches, self.baseline, *self.commits, *self.targets}
        self.check_run_fields(sorted(branches), self.variant, self.dataset)
        if self.concurrency is not None:
            levels = self.concurrency
            if len(levels) < 2 or levels[0] != 1 or len(set(levels)) != len(levels):
                raise ValueError(
                    f"concurrency: {levels}: 1 first (each item sent alone), then the levels "
                    "to compare with it, e.g. [1, 8]"
                )
            served = [b for b in self.branches if self.targets.get(b) == "vllm-serve"]
            if served:
                raise ValueError(
                    f"concurrency: branches {', '.join(served)} are launched per commit "
                    "(vllm-serve); the concurrency check needs a serving URL or simulator target"
                )
        repo = self.commit_repo
        self.commits = {b: full_commit(repo, c, f"commits.{b}") for b, c in self.commits.items()}
        for branch in self.targets:
            if (deploy := self.target_deploy_config(branch)) is not None:
                require_trusted(deploy, f"targets.{branch}.deploy_config")
        return self
