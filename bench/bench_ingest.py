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

from artifacts import ab_artifacts, parse_artifact
from common import bare_run, insert_row, raw_copy, scratch_db

from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.store.runs import save_run


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

        t0 = time.perf_counter()
        for i in range(args.runs):
            raw_copy(conn, f"copy{i}", art.clips, art.grades)
        copy_s = (time.perf_counter() - t0) / args.runs

        t0 = time.perf_counter()
        for i in range(max(1, args.runs // 2)):
            with conn.transaction():
                rid, gid = bare_run(conn, f"insert{i}")
                for clip in art.clips:
                    insert_row(conn, "clip_audio", ("run_id", rid), clip)
                for grade in art.grades:
                    insert_row(conn, "clip_grade", ("grading_id", gid), grade)
        insert_s = (time.perf_counter() - t0) / max(1, args.runs // 2)
    print(f"1088-clip run = {rows} clip rows, {args.runs} runs each")
    print(f"{'path':32} {'s/run':>8} {'rows/s':>10} {'vs raw COPY':>12}")
    for label, s in (
        ("store (save_run)", store_s),
        ("raw COPY", copy_s),
        ("row-by-row INSERT", insert_s),
    ):
        print(f"{label:32} {s:8.3f} {rows / s:10.0f} {copy_s / s:11.2f}x")


if __name__ == "__main__":
    main()
