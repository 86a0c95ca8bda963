"""Bad input never reaches the user as a traceback: a clear error, or a safely stored row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.evidence.audio import write_audio

runner = CliRunner()
HOSTILE = [
    "Robert'); DROP TABLE omni.run; -- is a student.",
    "<!channel> *urgent* <@U0123> & <https://evil.example> now.",  # no "|": the field separator
    'A quote " a backslash \\ a tab\tand a null-looking \\x00 sequence.',
    "Ünïcödé, emoji 🎙️ and right-to-left ‮text‬ too.",
    "word " * 4000,  # an enormous target
]


def _locale(root: Path, targets: list[str]) -> Path:
    (root / "prompt-wavs").mkdir(parents=True)
    write_audio(str(root / "prompt-wavs" / "p.wav"), np.full(2400, 0.1, np.float32), 24_000)
    rows = [f"h{i}|prompt|prompt-wavs/p.wav|{t}" for i, t in enumerate(targets)]
    (root / "meta.lst").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def _ok(out) -> None:  # type: ignore[no-untyped-def]
    assert "Traceback" not in out.output, out.output


def test_hostile_targets_are_stored_verbatim(db, tmp_path: Path) -> None:
    root = _locale(tmp_path / "en", HOSTILE)
    out = runner.invoke(
        app,
        [
            "bench",
            "--target",
            "simulator:rebase",
            "--branch",
            "b",
            "--dataset",
            str(root),
            "--transcript-mode",
            "--json",
        ],
    )
    _ok(out)
    assert out.exit_code == 0, out.output
    stored = [
        r["reference_text"]
        for r in db.execute("SELECT reference_text FROM omni.clip_audio ORDER BY ordinal")
    ]
    assert stored == [t.strip() for t in HOSTILE]
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 1  # no injection


def test_bad_datasets_are_clear_errors(db, tmp_path: Path) -> None:
    empty = _locale(tmp_path / "a", ["fine sentence."])
    (empty / "meta.lst").write_text("x|p|prompt-wavs/p.wav|fine.\n|p|prompt-wavs/p.wav|target\n")
    bad_utf8 = _locale(tmp_path / "b", ["fine."])
    (bad_utf8 / "meta.lst").write_bytes(b"x|p|prompt-wavs/p.wav|caf\xe9\n")
    missing = _locale(tmp_path / "c", ["fine."])
    (missing / "prompt-wavs" / "p.wav").unlink()
    corrupt = _locale(tmp_path / "d", ["fine."])
    (corrupt / "prompt-wavs" / "p.wav").write_bytes(b"RIFF\x00\x00garbage")
    for root, message in (
        (empty, "meta.lst:2"),
        (bad_utf8, "not UTF-8"),
        (missing, "does not exist"),
        (corrupt, "does not decode"),
    ):
        out = runner.invoke(
            app,
            [
                "bench",
                "--target",
                "simulator:main",
                "--branch",
                "b",
                "--dataset",
                str(root),
                "--transcript-mode",
            ],
        )
        _ok(out)
        assert out.exit_code == 1 and message in out.output, (root, out.output)
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0


def test_artifacts_with_wrong_types_are_clear_errors(db, tmp_path: Path) -> None:
    from tests.factories import small_artifact

    cases = {
        "wer_string": lambda d: d["seed_tts_wer_eval_items"][0].update(wer="abc"),
        "items_object": lambda d: d.update(seed_tts_wer_eval_items={"a": 1}),
        "utt_number": lambda d: d["seed_tts_wer_eval_items"][0].update(utterance_id=7),
        "top_list": None,
    }
    for name, mutate in cases.items():
        doc = small_artifact()
        if mutate is None:
            doc = [doc]  # type: ignore[assignment]
        else:
            mutate(doc)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "main"])
        _ok(out)
        assert out.exit_code == 1 and f"{name}.json" in out.output, (name, out.output)
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    out = runner.invoke(app, ["import", "vllm-omni", str(path), "--branch", "main"])
    _ok(out)
    assert out.exit_code == 1 and "not valid JSON" in out.output
