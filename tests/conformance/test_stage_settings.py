"""(a) The bodies our client sends, captured on loopback, through upstream's own request →
per-stage SamplingParams mapping: every stage gets exactly the nightly's settings, but the
run's seed. Also: our model of that mapping (stages.py, used by the simulator and recorded on
runs) equals upstream's, and vLLM's defaults we rely on are vLLM's own."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from omni_tasks.dataset import Utterance
from omni_tasks.synthesis import protocol, stages
from omni_tasks.synthesis.client import ClientConfig, synthesize_all
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.conformance.conftest import SERVING, SERVING_CLS, UpstreamServer
from tests.conformance.upstream import Upstream
from tests.conformance.vllm_facts import settings


def captured_bodies(
    prompt_wav: Path, seed: int | None, defaults: stages.StageDefaults | None
) -> list[dict[str, Any]]:
    """What our client puts on the wire, recorded by a loopback server."""
    bodies: list[dict[str, Any]] = []

    async def chat(request: Request) -> Response:
        bodies.append(await request.json())
        return Response(protocol.sse("[DONE]"), media_type="text/event-stream")

    utts = [
        Utterance(f"u{i}", "a prompt", prompt_wav, f"Sentence {i} to read.", i) for i in range(2)
    ]
    with serve_in_thread(
        Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    ) as url:
        cfg = ClientConfig(
            url,
            protocol.prompt_template("seed-tts-default"),
            seed=seed,
            stages=defaults,
            concurrency=2,
        )
        asyncio.run(synthesize_all(utts, cfg))
    assert len(bodies) == 2
    return bodies


def without_seed(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in p.items() if k != "seed"} for p in params]


def test_a_seeded_run_gives_every_stage_the_nightly_settings_but_the_seed(
    upstream_server: UpstreamServer, prompt_wav: Path
) -> None:
    nightly_body = captured_bodies(prompt_wav, None, None)[0]  # the harness's body: no list
    assert "sampling_params_list" not in nightly_body
    nightly = upstream_server.stage_params(nightly_body)
    assert [p["max_tokens"] for p in nightly] == [2048, 1000, 2000]  # the request's 2048 on stage 0
    for body in captured_bodies(prompt_wav, 42, upstream_server.stage_defaults):
        ours = upstream_server.stage_params(body)
        assert without_seed(ours) == without_seed(nightly)
        assert [p["seed"] for p in ours] == [42, 42, 42]
        # What the run records (and the simulator applies) is what upstream applies.
        recorded = stages.effective(body, upstream_server.stage_defaults)
        assert [{k: r[k] for k in p} for r, p in zip(recorded, ours, strict=True)] == ours


def test_the_partial_list_of_the_old_client_is_caught(upstream_server: UpstreamServer) -> None:
    """The check has teeth: the body the client sent before this suite existed (a seed with a
    temperature or two, nothing else) comes out of upstream's mapping at 16 tokens a stage."""
    old = protocol.request_body("Read me.", protocol.prompt_template("seed-tts-default"))
    old["sampling_params_list"] = [
        {"temperature": 0.0, "top_k": 1, "seed": 42},
        {"temperature": 0.9, "top_k": 50, "seed": 42},
        {"seed": 42},
    ]
    got = upstream_server.stage_params(old)
    assert [p["max_tokens"] for p in got] == [16, 16, 16]
    assert [p["repetition_penalty"] for p in got] == [1.0, 1.0, 1.0] and got[2][
        "temperature"
    ] == 1.0
    nightly = upstream_server.stage_params(
        {k: v for k, v in old.items() if k != "sampling_params_list"}
    )
    assert without_seed(got) != without_seed(nightly)
    # Our model of the server predicts the same truncation.
    assert [s["max_tokens"] for s in stages.effective(old, upstream_server.stage_defaults)] == [
        16,
        16,
        16,
    ]


def test_our_model_of_the_mapping_matches_upstream(upstream_server: UpstreamServer) -> None:
    body = protocol.request_body("Read me.", protocol.prompt_template("seed-tts-default"))
    cases = [
        body,
        {**body, "sampling_params_list": [{"seed": 3}]},
        {**body, "sampling_params_list": [{"max_tokens": 7, "top_p": 0.5}, {}, {"seed": 1}]},
    ]
    for case in cases:
        ours = stages.effective(case, upstream_server.stage_defaults)
        theirs = upstream_server.stage_params(case)
        assert [{k: o[k] for k in t} for o, t in zip(ours, theirs, strict=True)] == theirs


def test_vllm_defaults_and_request_fields_are_upstreams(upstream: Upstream) -> None:
    sp = upstream.standins["vllm.sampling_params.SamplingParams"]()
    assert {k: getattr(sp, k) for k in stages.VLLM_DEFAULTS} == stages.VLLM_DEFAULTS
    fields = upstream.class_value(SERVING, SERVING_CLS, "_OPENAI_SAMPLING_FIELDS")
    assert set(fields) == set(stages.REQUEST_OVERRIDES)


def test_the_talker_seed_by_version_and_the_simulators_deploy(
    upstream_server: UpstreamServer,
) -> None:
    """The talker's deploy seed exists from 0.30.0 only; the simulator serves 0.30.0's deploy
    under the CI overlay."""
    defaults = upstream_server.stage_defaults.stages
    if upstream_server.upstream.version >= "0.30.0":
        assert defaults == stages.NIGHTLY_STAGE_DEFAULTS
    else:
        assert "seed" not in defaults[1]
        assert [
            {k: v for k, v in d.items() if k != "seed"} for d in stages.NIGHTLY_STAGE_DEFAULTS
        ] == list(defaults)


def test_the_simulator_takes_every_sampling_field_the_release_takes(upstream: Upstream) -> None:
    """Every field of the release's SamplingParams (read from its `sampling_params.py`) is
    accepted in a stage list, as the real server accepts it (`logprobs`, `detokenize`...); a
    field it does not have is refused, as the real server refuses it."""
    tree = ast.parse((upstream.vllm / "vllm" / "sampling_params.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SamplingParams")
    theirs = {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and not n.target.id.startswith("_")
    }
    assert theirs <= stages.SAMPLING_FIELDS, sorted(theirs - stages.SAMPLING_FIELDS)
    nightly = stages.StageDefaults.nightly()
    body = {"sampling_params_list": [{"logprobs": 2, "detokenize": True}, {}, {}]}
    assert stages.effective(body, nightly)[0]["logprobs"] == 2
    with pytest.raises(stages.InvalidStageSettings, match="unknown sampling fields"):
        stages.effective({"sampling_params_list": [{"not_a_vllm_field": 1}]}, nightly)


def test_a_the_shipped_overlay_is_the_nightlys_deploy(upstream: Upstream, tmp_path: Path) -> None:
    """`synthesis/qwen3_omni_moe_ci.yaml` next to the wheel's own `qwen3_omni_moe.yaml`, as
    upstream's `resolve_deploy_yaml` reads it, gives each stage the nightly's settings; our
    reader of it agrees; and the docs' example config names that file."""
    import shutil

    import yaml

    deploy = tmp_path / "deploy"
    deploy.mkdir()
    shutil.copy(upstream.root / "vllm_omni" / "deploy" / "qwen3_omni_moe.yaml", deploy)
    overlay = Path(shutil.copy(stages.CI_OVERLAY, deploy))
    theirs = _resolve_deploy_yaml(upstream)(overlay)
    sp = upstream.standins["vllm.sampling_params.SamplingParams"]
    applied = [sp(**s["default_sampling_params"]) for s in theirs["stages"]]
    nightly = [sp(**s) for s in stages.NIGHTLY_STAGE_DEFAULTS]
    # But the talker's seed, which 0.28's yaml does not set: a seed is the run's (check above).
    assert without_seed([settings(p) for p in applied]) == without_seed(
        [settings(p) for p in nightly]
    )
    assert stages.StageDefaults.load(overlay).stages == tuple(
        s["default_sampling_params"] for s in theirs["stages"]
    )
    # Without the overlay the wheel's yaml is not the nightly's (its talker takes 4096 tokens).
    bare = yaml.safe_load((deploy / "qwen3_omni_moe.yaml").read_text())
    assert bare["stages"][1]["default_sampling_params"]["max_tokens"] != 1000
    doc = Path(__file__).resolve().parents[2] / "docs" / "operators" / "configure.md"
    readme = doc.read_text(encoding="utf-8")
    block = readme.split("# nightly.yaml", 1)[1].split("\n", 1)[1].split("```", 1)[0]
    example = yaml.safe_load(block)
    assert example["server"]["deploy_config"].endswith("vllm_omni/deploy/qwen3_omni_moe_ci.yaml")


def _resolve_deploy_yaml(upstream: Upstream) -> Any:
    """Upstream's `resolve_deploy_yaml`. OmegaConf (not installed here) only reads the YAML:
    plain PyYAML stands in for it, and the inheritance and merge rules are upstream's."""
    import yaml

    readers = {
        "vllm_omni.config.yaml_util.load_yaml_config": lambda p: yaml.safe_load(
            Path(p).read_text(encoding="utf-8")
        ),
        "vllm_omni.config.yaml_util.to_dict": lambda doc, **_: doc,
    }
    own = Upstream(upstream.version, {**upstream.standins, **readers})
    return own.load("vllm_omni.config.stage_config", ["resolve_deploy_yaml"])["resolve_deploy_yaml"]


def test_the_served_deploy_beside_the_log_resolves_its_base(
    upstream: Upstream, tmp_path: Path
) -> None:
    """The effective deploy a launched server is given lies beside its log, away from the
    overlay's `base_config`: upstream's reader and ours still find the base, and the served
    file resolves to the overlay's own settings with the variant's override on top."""
    import shutil

    from omni_tasks.synthesis.server import ServerSpec, effective_deploy_config, sandbox_paths

    deploy = tmp_path / "deploy"
    deploy.mkdir()
    shutil.copy(upstream.root / "vllm_omni" / "deploy" / "qwen3_omni_moe.yaml", deploy)
    overlay = Path(shutil.copy(stages.CI_OVERLAY, deploy))
    spec = ServerSpec(
        python="/usr/bin/python3",
        model="Qwen/Qwen3-Omni-30B-A3B-Instruct",
        log_path=tmp_path / "logs" / "server.log",
        deploy_config=overlay,
        deploy_overrides={"async_chunk": False},
        startup_timeout_s=60.0,
    )
    served = effective_deploy_config(spec)
    assert served is not None and served.parent != overlay.parent
    resolve = _resolve_deploy_yaml(upstream)
    theirs, original = resolve(served), resolve(overlay)
    assert theirs["stages"] == original["stages"]
    assert theirs["async_chunk"] is False
    assert stages.StageDefaults.load(served).stages == stages.StageDefaults.load(overlay).stages
    argv = ["/usr/bin/vllm", "serve", "--deploy-config", str(served)]
    readable = sandbox_paths(spec, argv).readable
    assert all(any(f.is_relative_to(r) for r in readable) for f in served.parent.rglob("*"))
