"""Every ASR backend, offline: real speech through faster-whisper tiny.en, and small random
models (built here) through transformers and openai-whisper for plumbing, windows and ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import transformers

from omni_tasks.evidence.audio import WHISPER_RATE
from omni_tasks.grading.asr import GraderSpec, LoadedGrader
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.wer import score
from omni_tasks.voice import speak
from tests.fakes.synthetic_models import build_openai_whisper, build_transformers_whisper

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Could you tell me where the nearest train station is?",
    "She sold all of her old paintings at the market last summer.",
    "Please turn off the lights before you leave the room.",
    "Our team finished the project two weeks ahead of schedule.",
]
FORTY_SECONDS = np.zeros(40 * WHISPER_RATE, dtype=np.float32)


@pytest.fixture(scope="module")
def speech() -> list[np.ndarray]:
    return [speak(s, rate=WHISPER_RATE) for s in SENTENCES]


@pytest.fixture(scope="module")
def tiny_en() -> LoadedGrader:
    return load_grader(GraderSpec(batch_size=5))


def test_faster_whisper_transcribes_piper_speech(tiny_en: LoadedGrader, speech) -> None:
    heard = tiny_en.backend.transcribe(speech)
    wers = [score(ref, hyp).wer for ref, hyp in zip(SENTENCES, heard, strict=True)]
    assert np.mean(wers) < 0.05, list(zip(SENTENCES, heard, strict=True))


def test_faster_whisper_batched_equals_one_at_a_time(tiny_en: LoadedGrader, speech) -> None:
    one_by_one = [tiny_en.backend.transcribe([clip])[0] for clip in speech]
    assert tiny_en.backend.transcribe(speech) == one_by_one


def test_faster_whisper_window_policies(tiny_en: LoadedGrader, speech) -> None:
    assert tiny_en.backend.features(FORTY_SECONDS).shape == (80, 3000)
    longform = load_grader(GraderSpec(window="longform"))
    assert longform.backend.features(FORTY_SECONDS).shape[1] > 3000
    assert longform.grader_id != tiny_en.grader_id
    # 35 s of speech then a sentence: truncate30 never hears the sentence, longform does.
    tail = "Remember to water the plants on Friday."
    clip = np.concatenate([np.zeros(35 * WHISPER_RATE, np.float32), speak(tail, WHISPER_RATE)])
    assert score(tail, longform.backend.transcribe([clip])[0]).wer < 0.3
    assert score(tail, tiny_en.backend.transcribe([clip])[0]).wer == 1.0


def test_tiny_en_grader_id_pins_the_offline_model(tiny_en: LoadedGrader) -> None:
    assert tiny_en.grader_id.startswith("faster-whisper/tiny.en@")
    assert tiny_en.description()["harness_versions_matched"] == ["0.26.0", "0.28.0"]


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hf")
    return (
        build_transformers_whisper(root / "whisper-a", seed=0),
        build_transformers_whisper(root / "whisper-b", seed=1),
    )


def test_transformers_backend_plumbing(hf_dirs: tuple[Path, Path], speech) -> None:
    grader = load_grader(
        GraderSpec(backend="transformers", model=str(hf_dirs[0]), max_new_tokens=8)
    )
    assert grader.backend.features(FORTY_SECONDS).shape == (80, 3000)
    texts = grader.backend.transcribe(speech[:3])
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts)
    # Batching changes no input: every clip is one padded 30 s window.
    assert [grader.backend.transcribe([c])[0] for c in speech[:3]] == texts
    assert grader.grader_id.startswith(f"transformers=={transformers.__version__}/whisper-a@")
    assert "/fp32/truncate30/greedy-t0-max8-en/" in grader.grader_id


def test_transformers_whole_timestamps_hears_long_clips_whole(hf_dirs, speech) -> None:
    """Harness 0.30's policy: long clips whole (features past 30 s), batched with each other
    only; batched transcripts equal one-at-a-time ones."""
    grader = load_grader(
        GraderSpec(
            backend="transformers",
            model=str(hf_dirs[0]),
            harness_version="0.30.0",
            max_new_tokens=16,
        )
    )
    assert grader.backend.features(FORTY_SECONDS).shape == (80, 4000)
    assert grader.backend.features(speech[0]).shape == (80, 3000)
    clips = [speech[0], FORTY_SECONDS, speech[1], np.zeros(0, np.float32), FORTY_SECONDS[:-8000]]
    batched = grader.backend.transcribe(clips)
    assert batched == [grader.backend.transcribe([c])[0] for c in clips]
    assert batched[3] == ""


def test_transformers_ids_follow_weights_and_precision(hf_dirs: tuple[Path, Path]) -> None:
    a = load_grader(GraderSpec(backend="transformers", model=str(hf_dirs[0])))
    b = load_grader(GraderSpec(backend="transformers", model=str(hf_dirs[1])))
    a_bf16 = load_grader(
        GraderSpec(backend="transformers", model=str(hf_dirs[0]), precision="bf16")
    )
    assert a.model_label.split("@")[1] != b.model_label.split("@")[1]
    assert len({a.grader_id, b.grader_id, a_bf16.grader_id}) == 3
    assert len(a_bf16.backend.transcribe([FORTY_SECONDS])) == 1


def test_openai_whisper_backend_windows(tmp_path: Path, speech) -> None:
    ckpt = build_openai_whisper(tmp_path / "tiny-random.pt")
    parity = load_grader(GraderSpec(backend="openai-whisper", model=str(ckpt), max_new_tokens=8))
    longform = load_grader(
        GraderSpec(backend="openai-whisper", model=str(ckpt), window="longform", max_new_tokens=8)
    )
    assert parity.backend.features(FORTY_SECONDS).shape == (80, 3000)
    assert longform.backend.features(FORTY_SECONDS).shape == (80, 4000)
    texts = parity.backend.transcribe(speech[:2])
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    assert len(longform.backend.transcribe(speech[:1])) == 1
    assert parity.grader_id != longform.grader_id
    assert parity.grader_id.startswith("openai-whisper/tiny-random@")
