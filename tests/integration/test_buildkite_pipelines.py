"""Which pipeline and step an artifact came from decides its series: NPU Video-MME runs in a
job of its own since vllm-omni#6596 and lands on MiniCPM-o's NPU Video-MME series; AMD's
pipeline (vllm-omni#6978) has a slug nobody verified, so it is a config value: the rules of
the `amd` role follow the slug a deployment gives (config `buildkite.slugs`, CLI `--slug`);
MiniCPM-o's realtime seed-TTS step spoke explicit Realtime TTS, then native duplex: two
series, two gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omni_tasks.importers.identity import BuildkiteError, load_rules, pipeline_slugs
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
from tests.fakes.buildkite_fleet import (
    MINICPM,
    MINICPM_DIR,
    QWEN,
    QWEN_DIR,
    REALTIME,
    TAG,
    add,
    daily_omni_doc,
    en_doc,
    sync,
    videomme_doc,
    zh_doc,
)

NPU_VIDEOMME_KEY = "nightly-omni-accuracy-minicpmo-4-5-videomme-npu"
NPU_VIDEOMME_LABEL = ":full_moon: Omni · MiniCPM-o 4.5 · Video-MME Accuracy Test"


def test_npu_videomme_job_imports_to_minicpm_o_npu_videomme(db) -> None:
    """The standalone NPU job (#6596: key, label, a3_npu_2's queue, the shared results folder)
    is a night of MiniCPM-o's Video-MME on the NPU lane, judged by its gate; the same file
    from the NPU job that no longer runs Video-MME (`-k "not videomme"`) matches no rule."""
    state = BuildkiteState()
    path = f"{MINICPM_DIR}/omni_acc_videomme_{TAG}.json"
    with serve_in_thread(buildkite_app(state)) as url:
        add(state, url, "vllm-omni-npu-ci", 8, {path: videomme_doc(1809)})
        add(state, url, "vllm-omni-npu-ci", 9, {path: videomme_doc(1809)})
        (job,) = state.pipelines["vllm-omni-npu-ci"][1]["jobs"]  # build 8 (newest first)
        assert job["agent_query_rules"] == ["queue=ascend-a3"]
        job.update(name=NPU_VIDEOMME_LABEL, step_key=NPU_VIDEOMME_KEY)
        report = sync(db, url, "vllm-omni-npu-ci")
    assert report.errors == [] and report.refused == []
    assert report.unknown == [f"9: {path}"]  # build 9's job is the Daily-Omni/seed-TTS one
    (run,) = db.execute("SELECT benchmark, model, lane, variant, n_expected, source FROM omni.run")
    assert (run["benchmark"], run["model"], run["lane"], run["variant"]) == (
        "videomme",
        MINICPM,
        "npu-a3",
        "default",
    )
    assert run["n_expected"] == 2700 and run["source"]["validity"] == []
    bk = run["source"]["buildkite"]
    assert (bk["step"], bk["step_key"], bk["sku"]) == (NPU_VIDEOMME_LABEL, NPU_VIDEOMME_KEY, "A3")
    (gate,) = run["source"]["upstream_gates"]  # 1809 / 2700 = 0.67 < 0.68
    assert (gate["figure"], gate["threshold"], gate["verdict"]) == (
        "videomme_accuracy",
        0.68,
        "fail",
    )


def test_the_amd_slug_is_a_config_value_its_rules_follow(db, tmp_path: Path) -> None:
    shipped = pipeline_slugs()
    assert shipped == {"cuda": "vllm-omni", "amd": "vllm-omni-amd", "npu": "vllm-omni-npu-ci"}
    moved = pipeline_slugs(slugs={"amd": "amd-ci"})
    assert moved == {**shipped, "amd": "amd-ci"}
    rules = load_rules(slugs={"amd": "amd-ci"})
    assert {r.pipeline for r in rules if r.lane.startswith("rocm-")} == {"amd-ci"}
    assert {r.pipeline for r in rules} == {"vllm-omni", "amd-ci", "vllm-omni-npu-ci"}
    # A typo of a role, or a value that is no slug, would import nothing: refused, named.
    with pytest.raises(BuildkiteError, match=r"no pipeline role 'amdd' \(it has amd, cuda, npu\)"):
        load_rules(slugs={"amdd": "amd-ci"})
    with pytest.raises(BuildkiteError, match="'AMD CI' is not a slug"):
        pipeline_slugs(slugs={"amd": "AMD CI"})
    # An operator's own rules file without roles keeps its slugs as written.
    own = tmp_path / "rules.yaml"
    own.write_text(
        "version: 1\nrules:\n  - {pipeline: my-ci, step: '*', artifact: '*.json',\n"
        f"     benchmark: daily_omni, model: {QWEN}, lane: cuda-h100x2}}\n"
    )
    assert [r.pipeline for r in load_rules(own)] == ["my-ci"]


def test_the_cli_imports_amd_under_the_slug_it_is_given(
    db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--pipeline amd --slug amd=SLUG`: the AMD step's artifacts of pipeline SLUG land on the
    ROCm series; without the slug the same pipeline's artifacts match no rule (listed)."""
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    monkeypatch.setenv("BUILDKITE_API_TOKEN", "bk-token")
    state = BuildkiteState()
    files = {
        f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{TAG}.json": en_doc(),
        f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{TAG}.json": daily_omni_doc(700),
    }
    with serve_in_thread(buildkite_app(state)) as url:
        add(state, url, "amd-ci", 5, files, queue="amd_mi300_2")
        for job in state.pipelines["amd-ci"][0]["jobs"]:
            job["name"] = "Qwen3-Omni Accuracy"

        def run(*args: str) -> dict:
            base = ["import", "buildkite", "--org", "vllm", "--base-url", f"{url}/v2"]
            out = CliRunner().invoke(
                app, [*base, "--artifact-host", STORAGE_HOSTS[0], *args, "--json"]
            )
            assert out.exit_code == 0, out.output
            return json.loads(out.stdout)

        unmoved = run("--pipeline", "amd-ci")
        assert (len(unmoved["amd-ci"]["imported"]), len(unmoved["amd-ci"]["unknown"])) == (0, 2)
        moved = run("--pipeline", "amd", "--slug", "amd=amd-ci")
        bad = CliRunner().invoke(
            app,
            ["import", "buildkite", "--org", "vllm", "--pipeline", "amd", "--slug", "rocm=amd-ci"],
        )
    assert len(moved["amd-ci"]["imported"]) == 2 and moved["amd-ci"]["unknown"] == []
    lanes = db.execute("SELECT DISTINCT lane, source->'buildkite'->>'pipeline' AS p FROM omni.run")
    assert [tuple(r.values()) for r in lanes.fetchall()] == [("rocm-mi300", "amd-ci")]
    assert bad.exit_code != 0 and "no pipeline role 'rocm'" in bad.output


def test_explicit_realtime_tts_and_native_duplex_are_two_series_with_their_own_gates(db) -> None:
    """MiniCPM-o's realtime seed-TTS test kept `--seed-backend openai-realtime-tts` when
    vllm-omni#7413 moved it to native duplex (first night 2026-09-16): a night before is
    explicit Realtime TTS (zh, judged by the chat test's constants), a night after is native
    duplex, judged by its own gate (0.05, #7701: 200 turns fail it); its two params of one
    night (#7758) are two variants, not a conflict, and a second sync imports nothing."""
    state = BuildkiteState()
    before, after = "20260910-120000", "20260917-120402"
    with serve_in_thread(buildkite_app(state)) as url:
        explicit = zh_doc(False, n=200, **REALTIME, date=before)
        add(
            state,
            url,
            "vllm-omni",
            41,
            {f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{before}.json": explicit},
        )
        duplex = {
            f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{tag}.json": en_doc(
                200, **{**REALTIME, "model_id": MINICPM, "date": tag}
            )
            for tag in (after, "20260917-143000")
        }
        add(state, url, "vllm-omni", 42, duplex)
        report = sync(db, url, "vllm-omni")
        again = sync(db, url, "vllm-omni")
    assert report.errors == report.refused == report.skipped_builds == []
    assert (again.imported, again.skipped) == ([], 3)
    runs = db.execute(
        "SELECT benchmark, lane, variant, nightly::text AS night, source FROM omni.run"
        " ORDER BY nightly, variant"
    ).fetchall()
    assert [(r["benchmark"], r["lane"], r["variant"], r["night"]) for r in runs] == [
        ("seed_tts_zh", "cuda-h100", "realtime", "2026-09-10"),
        ("seed_tts_en", "cuda-h100", "realtime-duplex", "2026-09-17"),
        ("seed_tts_en", "cuda-h100", "realtime-duplex-2", "2026-09-17"),
    ]
    gates = [
        {
            g["figure"]: (g["protocol"], g["threshold"], g["verdict"])
            for g in r["source"]["upstream_gates"]
        }
        for r in runs
    ]
    assert gates[0] == {  # the chat test's constants that night, over explicit Realtime TTS
        "seed_tts_content_error_mean": ("realtime", 0.0156, "pass"),
        "seed_tts_sim_mean": ("realtime", 0.689, "not_evaluated"),
    }
    assert (
        gates[1] == gates[2] == {"seed_tts_content_error_mean": ("realtime-duplex", 0.05, "fail")}
    )
    assert {r["source"]["upstream_gates"][0]["gate_entry"]["pr"] for r in runs[1:]} == {7413}
    # The explicit night lacks SIM: INFRA, naming its protocol.
    (invalid,) = report.invalid
    assert ":realtime:" in invalid and "seed_tts_sim_mean" in invalid
    sent = db.execute("SELECT payload::text AS p FROM omni.alert_outbox").fetchone()["p"]
    assert "(realtime)" in sent and "on H100, blocking" in sent
    assert [r["source"]["buildkite"]["protocol"] for r in runs] == [
        "realtime",
        "realtime-duplex",
        "realtime-duplex",
    ]


def test_an_artifact_says_its_realtime_protocol() -> None:
    from omni_tasks.importers.identity import identity_problem, protocol_of

    duplex = {"backend": "openai-realtime-duplex", "endpoint_type": "/v1/realtime?duplex=1"}
    assert protocol_of(duplex) == "realtime-duplex"
    assert protocol_of(REALTIME) == "realtime"
    assert protocol_of({"backend": "openai-chat-omni"}) == "chat"
    # The backend name #7413 kept says realtime, not which: both realtime series may take it;
    # a native-duplex backend is never an explicit Realtime TTS night, nor chat.
    assert identity_problem(MINICPM, "realtime-duplex", REALTIME) is None
    assert identity_problem(MINICPM, "realtime", REALTIME) is None
    assert "over realtime-duplex" in str(identity_problem(MINICPM, "realtime", duplex))
    assert "over realtime " in str(identity_problem(MINICPM, "chat", REALTIME))
