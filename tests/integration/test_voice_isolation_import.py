"""A held-out `failed_voice_isolation_<test>.json` in upstream's shape imports as a run of its
series (model × lane, variant mode.voices.cN) with every output's label, its pick and margin
per embedder, the first 2 s label beside it, and each failing output's WAV as evidence.

The file is built here field by field as upstream's `retain_failed_voice_isolation` writes it
(tests/helpers/speaker_similarity.py at vllm-omni 3b249ab6: `OutputScore.to_dict`, then
`**extra` after `voices`, so `voices` holds the voice source). Upstream's test helpers are not
in its wheel, so its writer cannot run here unmodified."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.evidence.audio import wav_bytes

VOICES = ["clone_2", "jiayan_zh", "indextts2"]
LEAKS = {5: "jiayan_zh", 17: "clone_2"}  # both embedders agree on another request's voice
DISAGREE = {9}


def output(idx: int, window: bool) -> dict:
    voice = VOICES[idx % 3]
    wrong = LEAKS.get(idx)
    picks = {
        "campplus": wrong or voice,
        "wavlm": (VOICES[(idx + 1) % 3] if idx in DISAGREE else wrong or voice),
    }
    label = "wrong_both_agree" if wrong else "disagree" if idx in DISAGREE else "correct"
    if window and idx == 20:
        label, picks = "wrong_both_agree", {"campplus": "clone_2", "wavlm": "clone_2"}
    own = 0.71 if label == "correct" else 0.42
    return {
        "idx": idx,
        "voice": voice,
        "duration_s": 4.2,
        "scored_s": 2.0 if window else 4.2,
        "window_short": False,
        "voices": VOICES,
        "sims": {e: [round(own - 0.1 * k, 4) for k in range(3)] for e in picks},
        "argmax": picks,
        "margin": {e: (0.2 if picks[e] == voice else -0.15) for e in picks},
        "label": label,
        "wrong_voice": wrong,
    }


def upstream_report(directory: Path) -> Path:
    requests = [
        {"idx": i, "voice": VOICES[i % 3], "text_idx": (i // 3) % 4, "text": f"text {i}",
         "seed": 1000 + i}
        for i in range(32)
    ]  # fmt: skip
    report = {
        "test": "concurrent",
        "voices": {n: f"{n}.wav" for n in VOICES},
        "requests": requests,
        "reference_matrix": {"campplus": [[1.0, 0.1, 0.2], [0.1, 1.0, 0.3], [0.2, 0.3, 1.0]]},
        "full": [output(i, False) for i in range(32)],
        "first_window": [output(i, True) for i in range(32)],
        **{"git_sha": "a" * 40, "mode": "async_chunk", "voices": "inline", "concurrency": 8},
    }
    directory.mkdir(parents=True)
    for i in (*LEAKS, *DISAGREE, 20):  # every output not correct in either window
        tone = 0.2 * np.sin(np.arange(24_000) / 10).astype(np.float32)
        (directory / f"failed_voice_isolation_concurrent_{i}.wav").write_bytes(
            wav_bytes(tone, 24_000)
        )
    path = directory / "failed_voice_isolation_concurrent.json"
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    return path


def test_upstreams_voice_isolation_report_imports_with_its_labels(db, tmp_path: Path) -> None:
    artifacts = tmp_path / "omni-home" / "artifacts"  # under OMNI_HOME: a trusted root
    path = upstream_report(artifacts)
    runner = CliRunner()
    out = runner.invoke(
        app,
        ["import", "vllm-omni", str(path), "--branch", "main", "--nightly", "2026-11-30",
         "--audio-root", str(artifacts)],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    key = out.stdout.strip().splitlines()[-1]
    run = db.execute(
        "SELECT benchmark, model, variant, commit_sha, n_expected FROM omni.run WHERE run_key = %s",
        (key,),
    ).fetchone()
    assert run == {
        "benchmark": "voice_isolation",
        "model": "FunAudioLLM/Fun-CosyVoice3-0.5B-2512",
        "variant": "async_chunk.inline.c8",
        "commit_sha": "a" * 40,
        "n_expected": 32,
    }
    stats = json.loads(runner.invoke(app, ["stats", key, "--json"]).stdout)
    assert stats["official"] == {
        "voice_isolation_correct": 29,
        "voice_isolation_wrong_both_agree": 2,
        "voice_isolation_disagree": 1,
        "voice_isolation_unscorable": 0,
    }
    assert stats["accuracy"] == 30 / 32  # only the two leaks fail upstream's assertion
    # `stats` speaks of the family's outputs and wrong voices, never of questions or answers
    shown = " ".join(runner.invoke(app, ["stats", key]).stdout.split())
    assert "wrong voices [95 % Wilson]" in shown and "(2 outputs)" in shown
    assert "outputs scored / failed / infra" in shown
    assert "question" not in shown and "answer" not in shown
    rows = db.execute(
        "SELECT g.utt_id, g.hypothesis, g.breakdown, a.audio_uri FROM omni.clip_grade g "
        "JOIN omni.grading gr USING (grading_id) JOIN omni.clip_audio a "
        "ON a.run_id = gr.run_id AND a.utt_id = g.utt_id WHERE g.incorrect ORDER BY g.utt_id"
    ).fetchall()
    assert [r["utt_id"] for r in rows] == ["req0005", "req0017"]
    assert rows[0]["hypothesis"] == "campplus→jiayan_zh -0.150; wavlm→jiayan_zh -0.150"
    assert rows[0]["breakdown"] == {"voice": "indextts2", "label": "wrong_both_agree",
                                    "first_window": "wrong_both_agree"}  # fmt: skip
    assert all(r["audio_uri"] and Path(r["audio_uri"]).is_file() for r in rows)
    first = db.execute("SELECT breakdown FROM omni.clip_grade WHERE utt_id = 'req0020'").fetchone()[
        "breakdown"
    ]
    assert first["label"] == "correct" and first["first_window"] == "wrong_both_agree"


def test_a_hostile_report_is_refused_naming_the_field(db, tmp_path: Path) -> None:
    path = upstream_report(tmp_path / "omni-home" / "bad")
    good = json.loads(path.read_text())
    for field, forge, said in (
        ("full", lambda d: d["full"][3].update(label="fine, trust me"), "full[3]: 'label'"),
        ("requests", lambda d: d["requests"][2].update(text="a\x00b"), "requests[2] 'text'"),
        ("test", lambda d: d.update(test="../../etc/x"), "'test' must be a plain name"),
    ):
        doc = json.loads(json.dumps(good))
        forge(doc)
        path.write_text(json.dumps(doc))
        out = CliRunner().invoke(
            app, ["import", "vllm-omni", str(path), "--branch", "main", "--nightly", "2026-11-30"]
        )
        assert out.exit_code == 1 and said in out.output, (field, out.output)
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0
