"""The nightly HTML report's size for a regressed night of 100 and of 1,088 clips, every
clip with audio on both sides (5 s of speech-like sound at 24 kHz): the page as written
(regressed clips' audio embedded as Ogg Opus, up to 30 per side; plotly's JavaScript in the
shared `plotly.min.js` beside it), and the baseline measured in the same run, the same page
with the clips embedded as WAV (as before 2026-12-02). It prints what the page is made of
(audio, the rest) and the ratio to the baseline. Goal: ≤ 2 MB at 100 clips, ≤ 10 MB at 1,088.

    .venv/bin/python bench/bench_report.py [--sizes 100 1088]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np
from artifacts import ABShape, ab_artifacts, parse_artifact
from common import scratch_db

from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.config import get_settings
from omni_tasks.contracts.night import NightQuestion
from omni_tasks.evidence.audio import write_audio
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.decide import decide_series
from omni_tasks.reports import html as report
from omni_tasks.series import Series
from omni_tasks.store.runs import save_run

NIGHT = dt.date(2026, 11, 2)
SERIES = Series("seed_tts_en")


def store(conn, tmp: Path, n: int) -> None:
    """Two nights (the second regressed), the regressed clips' audio on record on both sides
    (the only clips a report embeds: writing every clip's would change no byte of it)."""
    for i, shape in enumerate(
        (ABShape(n, n // 14, n // 270 + 1, n // 270 + 1), ABShape(n, n // 14, n // 15, n // 120))
    ):
        date = NIGHT - dt.timedelta(days=1 - i)
        docs = ab_artifacts(shape, seed=100 + i, date=date.strftime("%Y%m%d-020000"))
        for branch, doc in zip(("main", "rebase"), docs, strict=True):
            path = tmp / f"{date}_{branch}.json"
            path.write_text(json.dumps(doc))
            art = parse_artifact(path, branch=branch, commit=f"{branch}{i:04d}")
            save_run(conn, art.spec, art.clips, (ARTIFACT_GRADER, art.grades))
        conn.commit()
        decide_series(conn, NightQuestion(SERIES, date, "main", ("main", "rebase")), load_policy())
        conn.commit()
    rng = np.random.default_rng(n)
    t = np.arange(24_000 * 5) / 24_000
    regressed = conn.execute(
        "SELECT c.utt_id, ca.run_id FROM omni.v_regressed_clips c JOIN omni.clip_audio ca "
        "USING (utt_id) JOIN omni.run r ON r.run_id = ca.run_id AND r.nightly = c.nightly "
        "WHERE c.nightly = %s",
        (NIGHT,),
    ).fetchall()
    for row in regressed:  # each regressed clip, on both sides
        uri = tmp / "audio" / str(row["run_id"]) / f"{row['utt_id']}.wav"
        hz = 150 + 100 * rng.random()
        speechy = 0.3 * np.sin(2 * np.pi * hz * t) * np.sin(2 * np.pi * 3 * t)
        write_audio(str(uri), speechy.astype(np.float32), 24_000)
        conn.execute(
            "UPDATE omni.clip_audio SET audio_uri = %s WHERE run_id = %s AND utt_id = %s",
            (str(uri), row["run_id"], row["utt_id"]),
        )
    conn.commit()


def parts(page: str) -> dict[str, int]:
    audio = sum(len(m) for m in re.findall(r'src="data:audio/[a-z]+;base64,[^"]+"', page))
    return {"audio": audio, "rest": len(page) - audio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1088])
    args = ap.parse_args()
    mb = 1024 * 1024
    shared = len(report.get_plotlyjs().encode())
    print(f"plotly.min.js, once per reports folder (not in any page): {shared / mb:.2f} MB")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp, scratch_db() as conn:
            os.environ["OMNI_HOME"] = tmp
            os.environ["OMNI_TRUSTED_ROOTS"] = json.dumps([tmp])
            get_settings.cache_clear()
            store(conn, Path(tmp), n)
            page = report.nightly_report(conn, SERIES, NIGHT, load_policy().primary_tau)
            opus = report.opus_bytes
            try:  # the baseline: the same page with each clip embedded as its WAV
                report.opus_bytes = lambda data, where="": data  # type: ignore[assignment]
                wav_page = report.nightly_report(conn, SERIES, NIGHT, load_policy().primary_tau)
            finally:
                report.opus_bytes = opus  # type: ignore[assignment]
            players = page.count("<audio")
            size, base = len(page.encode()), len(wav_page.encode())
            made = ", ".join(f"{k} {v / mb:.2f} MB" for k, v in parts(page).items())
            print(
                f"{n} clips: report {size / mb:.2f} MB with {players} players ({made}); "
                f"with WAV audio {base / mb:.2f} MB; ratio opus / wav {size / base:.2f}"
            )
            get_settings.cache_clear()


if __name__ == "__main__":
    main()
