"""The Qwen3-Omni deploy the nightly serves is upstream's accuracy config as *served*: the
accuracy test serves `get_chunk_config()` (the CI overlay with async_chunk on) on CUDA and ROCm
and the overlay as it is (async_chunk off) on XPU, so a lane's platform (its accelerator,
`gpu_resource`; none is CUDA) picks the switch, and the run records the deploy it served and the
upstream commits it follows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from omni_tasks.config import get_settings
from omni_tasks.deployment.schema import Serving
from omni_tasks.environments import Environment
from omni_tasks.synthesis import server as server_mod
from omni_tasks.synthesis.provenance import Provenance
from omni_tasks.synthesis.stages import (
    CI_OVERLAY,
    QWEN3_OMNI_SOURCE,
    DeployConfigError,
    lane_deploy,
    lane_platform,
)

# The wheel's `qwen3_omni_moe.yaml` in the part the overlay reads (three stages, defaults).
BASE = """
async_chunk: true
stages:
  - {stage_id: 0, default_sampling_params: {temperature: 0.0, max_tokens: 2048}}
  - {stage_id: 1, default_sampling_params: {temperature: 0.9, top_k: 50, max_tokens: 4096}}
  - {stage_id: 2, default_sampling_params: {temperature: 0.0, max_tokens: 65536}}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("OMNI_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    yield tmp_path / "home"
    get_settings.cache_clear()


def _serve(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, **server: Any) -> dict:
    """`jobs.nightly.served` for a `vllm-serve` target with the shipped overlay beside the
    wheel's yaml, the server stood in: what it was launched with and what the run kept."""
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest
    from omni_tasks.environments.existing import ExistingStrategy
    from omni_tasks.jobs.nightly import served

    deploy = tmp_path / "vllm_omni" / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "qwen3_omni_moe.yaml").write_text(BASE)
    overlay = Path(shutil.copy(CI_OVERLAY, deploy / "qwen3_omni_moe_ci.yaml"))
    # server.py writes the effective deploy beside the server log and the base is read
    # relative to it: the base stands there too (see the report of issue 66's deploy part).
    logs = home / "server-logs"
    logs.mkdir(parents=True)
    (logs / "qwen3_omni_moe.yaml").write_text(BASE)

    seen: dict[str, Any] = {}

    @contextmanager
    def launched(spec: server_mod.ServerSpec) -> Iterator[server_mod.RunningServer]:
        argv = server_mod.command(spec, 1)
        path = Path(argv[argv.index("--deploy-config") + 1])
        seen["served"] = yaml.safe_load(path.read_text(encoding="utf-8"))
        yield server_mod.RunningServer("http://127.0.0.1:1", 1, spec.log_path, argv)

    monkeypatch.setattr(server_mod, "launched", launched)
    monkeypatch.setattr(server_mod, "provenance", lambda *a, **k: Provenance())
    monkeypatch.setattr(server_mod.shutil, "which", lambda *a, **k: "/usr/bin/vllm")
    monkeypatch.setattr(
        ExistingStrategy, "prepare", lambda self, commit: Environment(commit, "existing", "py")
    )
    params = Serving(
        environment={"strategy": "existing"},
        server={"deploy_config": str(overlay), "gpus": 0, **server},
    )
    req = BenchRequest(target="vllm-serve", branch="main", dataset="demo", commit="a" * 40)

    def run(r: BenchRequest) -> None:
        seen["run"] = r

    served(None, params, req, run)  # type: ignore[arg-type]
    return seen


@pytest.mark.parametrize("resource", [None, "nvidia.com/gpu"])
def test_a_cuda_lane_serves_qwen3_omni_with_async_chunk_on(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, resource: str | None
) -> None:
    extra = {} if resource is None else {"gpu_resource": resource}
    seen = _serve(tmp_path, home, monkeypatch, **extra)
    assert seen["served"]["async_chunk"] is True
    deploy = seen["run"].stack["deploy"]
    assert deploy["platform"] == "cuda"
    assert deploy["config"] == seen["served"]
    assert deploy["upstream"]["accuracy_test_commit"] == QWEN3_OMNI_SOURCE["accuracy_test_commit"]
    assert Path(deploy["file"]).parent.parent == home / "server-logs"  # its folder, bases beside
    assert seen["run"].stage_defaults.stages[0]["max_tokens"] == 150


def test_an_xpu_lane_serves_the_overlay_as_is_with_its_xpu_stages(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _serve(tmp_path, home, monkeypatch, gpu_resource="gpu.intel.com/xe")
    assert seen["served"]["async_chunk"] is False
    assert seen["run"].stack["deploy"]["platform"] == "xpu"
    assert seen["run"].stack["deploy"]["upstream"] == QWEN3_OMNI_SOURCE
    # The overlay's XPU section (thinker 100 tokens, one sequence): what the XPU server runs,
    # so the stage defaults the run seeds against are XPU's.
    assert seen["served"]["stages"][0]["max_num_seqs"] == 1
    assert seen["run"].stage_defaults.stages[0]["max_tokens"] == 100


def test_a_rocm_lane_serves_async_chunk_on_and_a_variant_still_decides(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lane_platform("amd.com/gpu") == "rocm"
    lane = lane_deploy(CI_OVERLAY, "amd.com/gpu", {})
    assert lane.overrides == {"async_chunk": True}
    # A variant (an ablation of the handoff) is the last word.
    variant = {"async_chunk": False, "stages": [{"stage_id": 1, "enforce_eager": True}]}
    over: dict[str, Any] = lane_deploy(CI_OVERLAY, "gpu.intel.com/xe", variant).overrides
    assert over["async_chunk"] is False
    assert [s["stage_id"] for s in over["stages"]] == [0, 1, 2]
    assert over["stages"][1]["enforce_eager"] is True


def test_another_deploy_is_served_as_configured(tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("async_chunk: false\nstages: []\n")
    lane = lane_deploy(other, "nvidia.com/gpu", {"max_num_seqs": 2})
    assert (lane.overrides, lane.source) == ({"max_num_seqs": 2}, None)
    assert lane_deploy(None, None, {}).overrides == {}
    # An accelerator no platform is known for serves any other deploy; the Qwen3-Omni one needs
    # the platform's switch, so there it is an error before the server starts.
    assert lane_deploy(other, "mthreads.com/vgpu", {}).platform == "mthreads.com/vgpu"
    with pytest.raises(DeployConfigError, match=r"mthreads\.com/vgpu"):
        lane_deploy(CI_OVERLAY, "mthreads.com/vgpu", {})


def test_a_lane_platform_is_its_accelerators_vendor() -> None:
    assert lane_platform(None) == "cuda"
    assert lane_platform("huawei.com/Ascend910") == "npu"
    with pytest.raises(DeployConfigError, match=r"example\.com/gpu"):
        lane_platform("example.com/gpu")
