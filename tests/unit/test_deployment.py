"""The deployment config: a typo is an error naming its field, before anything runs; the
trigger form overrides the config for one run; a scheduled run without a config fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from omni_tasks.deployment.night import resolve_night
from omni_tasks.deployment.reading import ENV, ConfigError
from omni_tasks.deployment.schema import NightlyParams

BASE = {
    "version": 1,
    "branches": ["main", "rebase"],
    "baseline": "main",
    "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
    "transcript_mode": True,
}


def resolve(form: dict, variable: str | None, *, scheduled: bool = False) -> NightlyParams:
    """A version 1 config's (or a complete form's) one series."""
    (params,) = resolve_night(form, variable, scheduled=scheduled).series
    return params


def _yaml(**changes: object) -> str:
    doc = {**BASE, **changes}
    return yaml.safe_dump({k: v for k, v in doc.items() if v is not None})


def test_the_config_is_the_run_and_the_form_overrides_it_once() -> None:
    params = resolve({"seeds": [7], "limit": None, "branches": []}, _yaml())
    assert params.seeds == [7] and params.branches == ["main", "rebase"]
    assert params.target_url("rebase") == "simulator:rebase"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"branchs": ["main"]}, "branchs: Extra inputs are not permitted"),
        ({"branches": ["main", "rebse"]}, "targets: branch 'rebse' has no target"),
        (
            {
                "targets": {
                    "main": "simulator:main",
                    "rebase": "simulator:rebase",
                    "x": "vllm-serve",
                }
            },
            "targets.x: not one of the branches",
        ),
        (
            {"targets": {"main": "simulator:mian", "rebase": "simulator:rebase"}},
            "unknown simulator profile 'mian'",
        ),
        (
            {"targets": {"main": "ftp://h", "rebase": "simulator:rebase"}},
            "targets.main: 'ftp://h' is not",
        ),
        ({"benchmark": "seed_tts_fr"}, "benchmark: unknown benchmark 'seed_tts_fr'"),
        ({"baseline": "trunk"}, "baseline: 'trunk' is not one of the branches"),
        ({"version": None}, "version: expected 1 or 2, got None"),
        ({"gpu_task_timeout_s": 0}, "gpu_task_timeout_s: Input should be greater than 0"),
        ({"seeds": []}, "seeds: at least one seed"),
        ({"auto_bisect": {"enabled": True}}, "auto_bisect.enabled: auto-bisect lists the commits"),
        ({"auto_bisect": {"enabled": True, "max_runs": 9}}, "auto_bisect.max_runs: Extra inputs"),
        ({"dataset": "/nonexistent/en"}, "dataset '/nonexistent/en' is not under a trusted root"),
        (
            {
                "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
                "environment": {"strategy": "docker"},
            },
            "environment.strategy: 'docker' is not available",
        ),
        (
            {
                "targets": {"main": "vllm-serve", "rebase": "vllm-serve"},
                "environment": {"strategy": "image", "image": "registry/vllm-omni:latest"},
            },
            "environment.image: the image strategy needs the image reference, with {commit}",
        ),
        (
            {
                "transcript_mode": False,
                "grader": {"backend": "transformers", "harness_version": "0.29.0"},
            },
            "grader: unknown harness version '0.29.0'",
        ),
        (
            {"transcript_mode": False, "grader": {"backend": "faster-whisper", "windw": "x"}},
            "grader: unknown grader setting(s) windw; known: backend, model",
        ),
    ],
)
def test_a_typo_is_an_error_that_names_the_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve({}, _yaml(**changes))
    assert message in str(caught.value)


def test_the_form_is_checked_like_the_config() -> None:
    with pytest.raises(ConfigError, match="branch 'rebse' has no target"):
        resolve({"branches": ["main", "rebse"]}, _yaml())


def test_a_scheduled_run_needs_a_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ConfigError, match="no deployment config: set the Airflow Variable"):
        resolve({}, None, scheduled=True)
    with pytest.raises(ConfigError, match="or give targets in the trigger form"):
        resolve({"seeds": [1]}, None)
    manual = resolve({"targets": BASE["targets"]}, None)  # a complete form needs no config
    assert manual.target_url("main") == "simulator:main"


def test_the_variable_or_the_env_may_name_a_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "nightly.yaml"
    path.write_text(_yaml(seeds=[3]))
    assert resolve({}, str(path)).seeds == [3]
    monkeypatch.setenv(ENV, str(path))
    assert resolve({}, None, scheduled=True).seeds == [3]
    monkeypatch.setenv(ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match=r"OMNI_NIGHTLY_CONFIG names .*missing\.yaml"):
        resolve({}, None, scheduled=True)


def test_a_url_target_carries_its_deploy_config(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json

    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    get_settings.cache_clear()
    try:
        targets = {
            "main": {"url": "http://gpu-1:8091", "deploy_config": str(tmp_path / "d.yaml")},
            "rebase": "http://gpu-2:8091",
        }
        with pytest.raises(ConfigError, match=r"targets\.main\.deploy_config: .*does not exist"):
            resolve({}, _yaml(targets=targets))
        (tmp_path / "d.yaml").write_text("stages: []\n")
        params = resolve({}, _yaml(targets=targets))
        assert params.target_url("main") == "http://gpu-1:8091"
        assert params.target_deploy_config("main") == str(tmp_path / "d.yaml")
        assert params.target_deploy_config("rebase") is None
    finally:
        get_settings.cache_clear()


FLEET = {
    "version": 2,
    "lanes": {
        "cuda-h100x2": {"queue": "gpu", "pool": "gpu", "gpus_per_server": 2},
        "rocm-mi300": {"queue": "gpu-rocm", "pool": "gpu-rocm", "gpu_resource": "amd.com/gpu"},
    },
    "defaults": {"seeds": [42], "transcript_mode": True},
    "series": [
        {
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "benchmark": "seed_tts_en",
            "lane": "cuda-h100x2",
            "branches": ["main", "rebase"],
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
        },
        {
            "model": "openbmb/MiniCPM-o-4_5",
            "benchmark": "daily_omni",
            "lane": "rocm-mi300",
            "branches": ["main", "rebase"],
            "targets": {"main": "simulator:main", "rebase": "simulator:rebase"},
            "seeds": [1, 2],
        },
    ],
}


def test_a_fleet_config_is_its_series_each_with_the_defaults_and_its_lane() -> None:
    night = resolve_night({"limit": 5}, yaml.safe_dump(FLEET))
    assert [p.series.label for p in night.series] == [
        "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · cuda-h100x2",
        "daily_omni · MiniCPM-o-4_5 · rocm-mi300",
    ]
    qwen, minicpm = night.series
    assert (qwen.seeds, minicpm.seeds) == ([42], [1, 2])  # a series' own fields win
    assert qwen.limit == minicpm.limit == 5  # the form applies to every series
    assert (minicpm.server.model, minicpm.server.gpus, minicpm.server.gpu_resource) == (
        "openbmb/MiniCPM-o-4_5",
        2,
        "amd.com/gpu",
    )
    assert night.lanes["rocm-mi300"].queue == "gpu-rocm"
    assert resolve({}, yaml.safe_dump(BASE)).series.lane == "default"  # version 1: one series


@pytest.mark.parametrize(
    ("form", "changes", "message"),
    [
        ({"lane": "cuda-h100x2"}, {}, "lane: set by the deployment config only"),
        (
            {"environment": {"image": "evil.example/x:{commit}"}},
            {},
            "environment.image: set by the deployment config only",
        ),
        ({"server": {"gpu_resource": "amd.com/gpu"}}, {}, "server.gpu_resource: set by the"),
        ({}, {"lanes": {"cuda-h100x2": {}}}, "lane: 'rocm-mi300' is not one of the lanes"),
        ({}, {"lanes": {"bad lane": {}}}, "lanes: 'bad lane' is not a lane name"),
        ({}, {"branches": ["main"]}, "branches: not a version 2 key"),
        ({}, {"series": [FLEET["series"][0]] * 2}, "is listed twice: one series, one baseline"),
    ],
)
def test_a_fleet_config_or_form_that_cannot_run_names_the_field(
    form: dict, changes: dict, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_night(form, yaml.safe_dump({**FLEET, **changes}))
    assert message in str(caught.value)


def test_a_deploy_overlay_reads_its_base_beside_it_and_nowhere_else(tmp_path) -> None:
    import pytest

    from omni_tasks.synthesis.stages import DeployConfigError, StageDefaults

    (tmp_path / "base.yaml").write_text(
        "stages:\n"
        + "".join(
            f"  - {{stage_id: {i}, default_sampling_params: {{max_tokens: 9, temperature: 0.5}}}}\n"
            for i in range(3)
        )
    )
    (tmp_path / "ci.yaml").write_text(
        "base_config: base.yaml\nstages:\n  - {stage_id: 1, default_sampling_params: {max_tokens: 7}}\n"
    )
    loaded = StageDefaults.load(tmp_path / "ci.yaml").stages
    assert [s["max_tokens"] for s in loaded] == [9, 7, 9]
    assert loaded[1]["temperature"] == 0.5  # merged key by key, as vLLM-Omni merges
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "evil.yaml").write_text("base_config: ../base.yaml\n")
    with pytest.raises(DeployConfigError, match="in its own directory"):
        StageDefaults.load(tmp_path / "sub" / "evil.yaml")
    (tmp_path / "loop.yaml").write_text("base_config: loop.yaml\n")
    with pytest.raises(DeployConfigError, match="nested more than"):
        StageDefaults.load(tmp_path / "loop.yaml")


def test_a_bisect_or_ablation_form_left_empty_runs_the_configured_series_targets() -> None:
    """Production defaults: a bisect form that names no target or dataset bisects the
    configured series' candidate branch on its own target and dataset; an ablation's two
    targets are its candidate's and baseline's; what the form names wins; with no config the
    simulator is only what the form names."""
    from omni_tasks.deployment.one_series import one_series_form

    config = _yaml(
        targets={"main": "http://serve-main:8000", "rebase": "http://serve-rebase:8000"},
        dataset="/srv/omni/datasets/seed-tts-eval/en",
        transcript_mode=None,
    )
    form = {"history": ["a" * 40, "b" * 40], "target": None, "dataset": None}
    bisect = one_series_form("bisect", form, config)
    assert bisect["target"] == "http://serve-rebase:8000"
    assert bisect["dataset"] == "/srv/omni/datasets/seed-tts-eval/en"
    chosen = one_series_form("bisect", {**form, "branch": "main"}, config)
    assert chosen["target"] == "http://serve-main:8000"
    ablate = one_series_form("ablate", {"nightly": "2026-11-28"}, config)
    assert (ablate["candidate_target"], ablate["baseline_target"]) == (
        "http://serve-rebase:8000",
        "http://serve-main:8000",
    )
    named = one_series_form("bisect", {**form, "target": "http://serve-main:8000"}, config)
    assert named["target"] == "http://serve-main:8000"  # one of the config's: the form's wins
    assert "target" not in one_series_form("bisect", form, None)  # no config: nothing implied


def test_a_family_that_cannot_be_bisected_is_refused_with_the_form() -> None:
    """DuplexEval (summary-only) is refused a bisect and an ablation, Daily-Omni (no stage
    settings in its request) an ablation, before any GPU work: at submit by the form's schema,
    and by the form check, naming what the family lacks; seed-TTS and Daily-Omni are
    bisected."""
    from airflow.sdk.definitions.param import ParamValidationError

    from omni_tasks.dag_support.params import ablate_params, bisect_params
    from omni_tasks.deployment.one_series import one_series_form

    form = {"history": ["a" * 40, "b" * 40], "target": "simulator:commit-history"}
    with pytest.raises(ConfigError, match=r"benchmark: duplex_eval \(duplex_eval\) cannot be"):
        one_series_form("bisect", {**form, "benchmark": "duplex_eval"}, None)
    with pytest.raises(ParamValidationError):
        bisect_params()["benchmark"].resolve("duplex_eval")
    for benchmark in ("duplex_eval", "daily_omni"):
        with pytest.raises(ParamValidationError):
            ablate_params()["benchmark"].resolve(benchmark)
    for benchmark in ("seed_tts_zh", "daily_omni"):
        assert bisect_params()["benchmark"].resolve(benchmark) == benchmark
    # An empty target is allowed by the form (the config's is used); a bad one is not.
    assert bisect_params()["target"].resolve(None) is None
    assert ablate_params()["baseline_target"].resolve(None) is None
    with pytest.raises(ParamValidationError):
        bisect_params()["target"].resolve("file:///etc/passwd")
    assert one_series_form("bisect", {**form, "benchmark": "seed_tts_en"}, None)["history"]
