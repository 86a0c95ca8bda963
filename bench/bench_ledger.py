"""The standing-failure ledger of one series at a year of history: incremental vs a full
recompute.

A year of nights (365 × 1,088 items by default) of one seed-TTS series' main branch is stored
as synthetic clip rows (COPY, as the store writes them): about 5 % of items broken every night
(half of them speaking the task text), 5 % broken at random at 40 %, the rest broken at 1 %.
The ledger is then read for the window (`--window`, default 28 nights) and a longer one
(`--long-window`, 90), each two ways:

- **full recompute**: every night of the window read from its clip records again (the ledger's
  item rows cleared first), then classified;
- **incremental**: the year already read, one new night stored and the ledger loaded again (the
  new night's clip records read, the window's item rows, the classification).

Goal: the incremental ledger ≤ 1 s per series at a year of history.

    .venv/bin/python bench/bench_ledger.py [--nights 365] [--items 1088] [--window 28] [--long-window 90]
        [--reps 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import time
from typing import Any

import psycopg
from common import scratch_db

from omni_tasks.records import ClipAudio, ClipGrade
from omni_tasks.series import Series
from omni_tasks.store import ledger
from omni_tasks.store.runs import copy_clip_audio, copy_clip_grades

FIRST = dt.date(2025, 11, 1)
SERIES = Series("seed_tts_en")
REFERENCE = "the quick brown fox jumps over the lazy dog again"  # 10 words


def item_rows(items: int, night: int) -> tuple[list[ClipAudio], list[ClipGrade]]:
    """One night's clip rows: chronic, flaky and quiet items as the module docstring says."""
    rng = random.Random(night)
    clips, grades = [], []
    for i in range(items):
        utt = f"u{i:04d}"
        chronic, flaky = i % 20 == 0, i % 20 == 1
        broken = chronic or rng.random() < (0.4 if flaky else 0.01)
        leak = chronic and i % 40 == 0
        hyp = 30 if broken else 10
        clips.append(ClipAudio(utt, i, REFERENCE + ("?" if i % 10 == 0 else "."), "ok"))
        grades.append(
            ClipGrade(
                utt,
                "graded",
                ref_words=10,
                hyp_words=hyp,
                wer=2.0 if broken else 0.0,
                thinker_wer=2.0 if broken else 0.0,
                task_leak=leak,
                is_question=i % 10 == 0,
            )
        )
    return clips, grades


def store_night(conn: psycopg.Connection[Any], n: int, items: int) -> None:
    """Night n's run, grading and clip rows (a bare run row: no hashing, no checks)."""
    nightly = FIRST + dt.timedelta(days=n)
    found = conn.execute(
        "INSERT INTO omni.run (run_key, benchmark, nightly, branch, commit_sha, trigger, status,"
        " config_hash, n_expected, content_hash) VALUES (%s, %s, %s, 'main', %s, 'nightly',"
        " 'complete', '', %s, '') RETURNING run_id",
        (f"ledger:{nightly}", SERIES.benchmark, nightly, f"{n:040x}", items),
    ).fetchone()
    assert found is not None
    grading = conn.execute(
        "INSERT INTO omni.grading (run_id, grader_id) VALUES (%s, 'g') RETURNING grading_id",
        (found["run_id"],),
    ).fetchone()
    assert grading is not None
    clips, grades = item_rows(items, n)
    copy_clip_audio(conn, found["run_id"], clips)
    copy_clip_grades(conn, grading["grading_id"], grades)


def full(conn: psycopg.Connection[Any], window: int) -> float:
    """Seconds to compute the window's ledger from clip records (the ledger's rows cleared)."""
    conn.execute("DELETE FROM omni.ledger_night")
    conn.commit()
    t0 = time.perf_counter()
    ledger.load(conn, SERIES, branch="main", nights=window)
    conn.commit()
    return time.perf_counter() - t0


def incremental(conn: psycopg.Connection[Any], window: int, n: int, items: int) -> float:
    """Seconds to load the window's ledger after night n is stored (every earlier night read)."""
    store_night(conn, n, items)
    conn.commit()
    t0 = time.perf_counter()
    ledger.load(conn, SERIES, branch="main", nights=window)
    conn.commit()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--items", type=int, default=1088)
    ap.add_argument("--window", type=int, default=28)
    ap.add_argument("--long-window", type=int, default=90, help="a second, longer window")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    with scratch_db() as conn:
        t0 = time.perf_counter()
        for n in range(args.nights):
            store_night(conn, n, args.items)
        conn.commit()
        print(
            f"stored {args.nights} nights × {args.items} items of clip rows in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        night = args.nights
        for window in sorted({args.window, min(args.long_window, args.nights)}):
            full_s = statistics.median(full(conn, window) for _ in range(args.reps))
            ledger.load(conn, SERIES, branch="main", nights=args.nights)  # the year read
            conn.commit()
            inc = []
            for _ in range(args.reps):
                inc.append(incremental(conn, window, night, args.items))
                night += 1
            inc_s = statistics.median(inc)
            print(
                f"window {window:>3} nights: full recompute {full_s:.3f} s, incremental "
                f"{inc_s:.3f} s (goal <= 1 s), ratio full / incremental {full_s / inc_s:.1f}"
            )
        states = ledger.load(conn, SERIES, branch="main", nights=args.window)
        chronic = len(states.state("chronic", "new"))
        print(f"ledger of the last {args.window} nights: {chronic} chronic of {len(states.items)}")


if __name__ == "__main__":
    main()
