"""Ingest: clip rows/s through the store (`save_run`: run + clips + grading, idempotency hash)
vs raw COPY of the same rows (the limit on this box) vs row-by-row INSERT.

    .venv/bin/python bench/bench_ingest.py [--runs 5]

Each run is 1088 clips = 2176 rows (clip_audio + clip_grade). Not a timed test.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from common import scratch_db

from omni_tasks.importers.vllm_omni import ARTIFACT_GRADER, parse_artifact
from omni_tasks.store.queries import sql
from omni_tasks.store.runs import save_run
from omni_tasks.synthetic import ab_artifacts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import json

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.json"
        path.write_text(json.dumps(ab_artifacts(seed=1)[0]))
        art = parse_artifact(path, branch="bench")
    rows = 2 * len(art.clips)
    with scratch_db() as conn:
        t0 = time.perf_counter()
        for i in range(args.runs):
            spec = dataclasses.replace(art.spec, branch=f"store{i}")
            save_run(conn, spec, art.clips, (ARTIFACT_GRADER, art.grades))
        store_s = (time.perf_counter() - t0) / args.runs

        def run_row(label: str) -> int:
            return int(conn.execute(
                "INSERT INTO omni.run (run_key, benchmark, nightly, branch, trigger, status, "
                "config_hash, n_expected, content_hash) VALUES (%s, 'b', '2026-11-01', %s, "
                "'import', 'complete', '', 1088, %s) RETURNING run_id", (label, label, label),
            ).fetchone()["run_id"])  # type: ignore[index]  # fmt: skip

        def grading_row(run_id: int) -> int:
            return int(conn.execute(
                "INSERT INTO omni.grading (run_id, grader_id) VALUES (%s, 'g') RETURNING grading_id",
                (run_id,)).fetchone()["grading_id"])  # type: ignore[index]  # fmt: skip

        audio = [(c.utt_id, c.ordinal, c.reference_text, c.synth_status, c.audio_uri,
                  c.audio_seconds, c.latency_s, c.thinker_text, c.error_detail) for c in art.clips]  # fmt: skip
        grades = [(g.utt_id, g.grade_status, g.hypothesis, g.hypothesis_norm, g.ref_words,
                   g.hyp_words, g.substitutions, g.deletions, g.insertions, g.hits, g.wer,
                   g.thinker_wer, g.task_leak, g.is_question, g.error_detail) for g in art.grades]  # fmt: skip
        t0 = time.perf_counter()
        for i in range(args.runs):
            with conn.transaction():
                rid = run_row(f"copy{i}")
                gid = grading_row(rid)
                with conn.cursor() as cur:
                    with cur.copy(sql("copy_clip_audio")) as cp:
                        for a in audio:
                            cp.write_row((rid, *a))
                    with cur.copy(sql("copy_clip_grade")) as cp:
                        for g in grades:
                            cp.write_row((gid, *g))
        copy_s = (time.perf_counter() - t0) / args.runs

        t0 = time.perf_counter()
        for i in range(max(1, args.runs // 2)):
            with conn.transaction():
                rid = run_row(f"insert{i}")
                gid = grading_row(rid)
                for a in audio:
                    conn.execute("INSERT INTO omni.clip_audio (run_id, utt_id, ordinal, "
                                 "reference_text, synth_status, audio_uri, audio_seconds, "
                                 "latency_s, thinker_text, error_detail) VALUES "
                                 "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", (rid, *a))  # fmt: skip
                for g in grades:
                    conn.execute("INSERT INTO omni.clip_grade (grading_id, utt_id, grade_status, "
                                 "hypothesis, hypothesis_norm, ref_words, hyp_words, "
                                 "substitutions, deletions, insertions, hits, wer, thinker_wer, "
                                 "task_leak, is_question, error_detail) VALUES (%s, %s, %s, %s, "
                                 "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", (gid, *g))  # fmt: skip
        insert_s = (time.perf_counter() - t0) / max(1, args.runs // 2)
    print(f"1088-clip run = {rows} clip rows, {args.runs} runs each")
    print(f"{'path':32} {'s/run':>8} {'rows/s':>10} {'vs raw COPY':>12}")
    for label, s in (("store (save_run)", store_s), ("raw COPY", copy_s),
                     ("row-by-row INSERT", insert_s)):  # fmt: skip
        print(f"{label:32} {s:8.3f} {rows / s:10.0f} {copy_s / s:11.2f}x")


if __name__ == "__main__":
    main()
