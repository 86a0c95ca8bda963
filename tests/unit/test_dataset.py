"""seed-tts-eval dataset loading: every bad row is an error naming file and line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omni_tasks.dataset import DatasetError, load_dataset
from omni_tasks.evidence.audio import write_audio
from omni_tasks.grading.flags import is_question


def _locale(tmp_path: Path, rows: list[str], wavs: dict[str, bytes | None] | None = None) -> Path:
    root = tmp_path / "en"
    (root / "prompt-wavs").mkdir(parents=True)
    for name, data in (wavs or {"a.wav": None}).items():
        path = root / "prompt-wavs" / name
        if data is None:
            write_audio(str(path), np.full(2400, 0.1, dtype=np.float32), 24_000)
        else:
            path.write_bytes(data)
    (root / "meta.lst").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_loads_four_and_five_field_rows(tmp_path: Path) -> None:
    root = _locale(
        tmp_path,
        [
            "u1|hello there|prompt-wavs/a.wav|Say this.",
            "u2|hello there|prompt-wavs/a.wav|And this?|gt/u2.wav",
        ],
    )
    ds = load_dataset(root)
    assert [u.utt_id for u in ds.utterances] == ["u1", "u2"]
    assert ds.utterances[1].target_text == "And this?" and ds.utterances[1].line == 2
    assert ds.name == "en" and len(ds.fingerprint) == 64


def test_fingerprint_follows_rows_and_prompt_audio(tmp_path: Path) -> None:
    a = load_dataset(_locale(tmp_path / "a", ["u1|p|prompt-wavs/a.wav|Say this."]))
    b = load_dataset(_locale(tmp_path / "b", ["u1|p|prompt-wavs/a.wav|Say that."]))
    quiet = _locale(tmp_path / "c", ["u1|p|prompt-wavs/a.wav|Say this."])
    write_audio(str(quiet / "prompt-wavs" / "a.wav"), np.zeros(2400, np.float32), 24_000)
    c = load_dataset(quiet)
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3
    assert load_dataset(tmp_path / "a" / "en").fingerprint == a.fingerprint


@pytest.mark.parametrize(
    ("rows", "wavs", "message"),
    [
        (
            ["u1|p|prompt-wavs/a.wav"],
            None,
            r"meta.lst:1: expected 4 or 5 '\|'-separated fields, got 3",
        ),
        (
            ["u1|p|prompt-wavs/a.wav|x", "u1|p|prompt-wavs/a.wav|y"],
            None,
            r"meta.lst:2: duplicate utterance id 'u1' \(first on line 1\)",
        ),
        (
            ["u1|p|prompt-wavs/a.wav|x", "", "u2|p|prompt-wavs/missing.wav|y"],
            None,
            r"meta.lst:3: prompt wav .*missing.wav does not exist",
        ),
        (
            ["u1|p|prompt-wavs/bad.wav|x"],
            {"bad.wav": b"RIFF garbage"},
            r"meta.lst:1: .*does not decode",
        ),
        (["|p|prompt-wavs/a.wav|text"], None, r"meta.lst:1: utterance id must not be empty"),
        (["u1|p|prompt-wavs/a.wav|   "], None, r"meta.lst: no utterances"),
        ([""], None, r"no utterances"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, rows, wavs, message) -> None:
    with pytest.raises(DatasetError, match=message):
        load_dataset(_locale(tmp_path, rows, wavs))


def test_non_utf8_and_missing_files_are_clear(tmp_path: Path) -> None:
    root = _locale(tmp_path, ["u1|p|prompt-wavs/a.wav|x"])
    (root / "meta.lst").write_bytes(b"u1|p|prompt-wavs/a.wav|caf\xe9\n")
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_dataset(root)
    with pytest.raises(DatasetError, match="no such dataset file"):
        load_dataset(tmp_path / "nowhere")


def test_demo_corpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_CACHE_DIR", str(tmp_path))
    get_settings.cache_clear()
    ds = load_dataset("demo")
    assert len(ds.utterances) == 100
    questions = sum(is_question(u.target_text) for u in ds.utterances)
    assert 20 <= questions <= 40  # about a quarter to a third questions or requests
    assert all(u.prompt_wav.is_file() for u in ds.utterances)
    assert load_dataset("demo").fingerprint == ds.fingerprint  # prompts spoken deterministically
    get_settings.cache_clear()
