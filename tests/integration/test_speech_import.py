"""An upstream seed-TTS artifact measured over `/v1/audio/speech` (`--backend
openai-audio-speech`, a TTS model) imports under its own protocol: a rule that says chat for
the same file is not taken (the artifact's own backend disagrees), the audio-speech rule is,
and the run is stored with the protocol as its variant, never as a chat night."""

from __future__ import annotations

from omni_tasks.importers.buildkite import import_pipeline
from omni_tasks.importers.buildkite_api import BuildkiteSource
from omni_tasks.importers.identity import ArtifactRule, protocol_of
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
from tests.fakes.buildkite_fleet import TAG, add, en_doc

TTS = "Qwen/Qwen3-TTS-12Hz-1.7B-Base"
PATH = f"tests/e2e/accuracy/qwen3_tts/results/qwen_omni_acc_seed_tts_{TAG}.json"
SPEECH = {"backend": "openai-audio-speech", "endpoint_type": "openai-audio-speech"}


def _rule(protocol: str) -> ArtifactRule:
    return ArtifactRule(
        pipeline="vllm-omni",
        step="*",
        artifact="*/qwen_omni_acc_seed_tts_*.json",
        model=TTS,
        lane="cuda-h100",
        protocol=protocol,  # type: ignore[arg-type]  # a Protocol literal, as the yaml gives it
    )


def _import(db, rules: tuple[ArtifactRule, ...]):  # type: ignore[no-untyped-def]
    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        add(state, url, "vllm-omni", 11, {PATH: en_doc(50, model_id=TTS, **SPEECH)})
        src = BuildkiteSource(
            "vllm",
            "vllm-omni",
            "bk-token",
            f"{url}/v2",
            backoff_s=0.01,
            artifact_hosts=STORAGE_HOSTS,
            rules=rules,
        )
        return import_pipeline(db, src)


def test_the_speech_backend_is_its_own_protocol() -> None:
    assert protocol_of(SPEECH) == "audio-speech"
    assert protocol_of({"endpoint_type": "/v1/audio/speech"}) == "audio-speech"
    assert protocol_of({"backend": "openai-chat-omni"}) == "chat"


def test_a_speech_artifact_imports_under_its_protocol(db) -> None:  # type: ignore[no-untyped-def]
    report = _import(db, (_rule("chat"), _rule("audio-speech")))
    assert len(report.imported) == 1 and not report.refused, report
    run = db.execute("SELECT model, lane, variant, n_expected FROM omni.run").fetchone()
    assert (run["model"], run["lane"], run["variant"]) == (TTS, "cuda-h100", "audio-speech")
    assert run["n_expected"] == 50


def test_a_speech_artifact_is_never_labelled_chat(db) -> None:  # type: ignore[no-untyped-def]
    report = _import(db, (_rule("chat"),))
    assert report.imported == [] and len(report.refused) == 1, report
    assert "over audio-speech" in report.refused[0]
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0
