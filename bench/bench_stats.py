"""Statistics + paired comparison for one 1088-clip pair, beside a plain-numpy baseline that
does the same arithmetic (tail fraction, capped mean, paired table, exact McNemar).

    .venv/bin/python bench/bench_stats.py [--repeat N]

Prints seconds per pair for both and the ratio (ours / numpy). Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from artifacts import ab_artifacts, parse_artifact
from scipy.stats import binomtest

from omni_tasks.analysis.paired import paired_table
from omni_tasks.analysis.run_stats import run_stats
from omni_tasks.records import ClipRecord

TAU = 0.5


def records(path: Path) -> list[ClipRecord]:
    art = parse_artifact(path, branch="bench")
    grades = {g.utt_id: g for g in art.grades}
    return [
        ClipRecord(
            c.utt_id,
            c.reference_text,
            c.synth_status,
            grades[c.utt_id].grade_status,
            grades[c.utt_id].wer,
            grades[c.utt_id].ref_words,
            grades[c.utt_id].hyp_words,
            grades[c.utt_id].hypothesis,
            grades[c.utt_id].thinker_wer,
            grades[c.utt_id].task_leak,
            grades[c.utt_id].is_question,
        )
        for c in art.clips
    ]


def ours(base: list[ClipRecord], cand: list[ClipRecord]) -> int:
    run_stats(base, TAU)
    run_stats(cand, TAU)
    return paired_table(base, cand, TAU).regressed


def plain_numpy(wb: np.ndarray, wc: np.ndarray) -> int:
    for w in (wb, wc):
        np.minimum(w, 1.0).mean()
        (w > TAU).mean()
        np.median(w)
    bb, cb = wb > TAU, wc > TAU
    b = int((cb & ~bb).sum())
    c = int((bb & ~cb).sum())
    binomtest(b, b + c, 0.5, alternative="greater")
    return b


def timeit(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, doc in zip(("base", "cand"), ab_artifacts(), strict=True):
            p = Path(tmp) / f"{name}.json"
            p.write_text(json.dumps(doc))
            paths.append(p)
        base, cand = records(paths[0]), records(paths[1])
    wb = np.array([c.wer for c in base])
    wc = np.array([c.wer for c in cand])
    assert ours(base, cand) == plain_numpy(wb, wc)  # same arithmetic, same answer
    t_ours = timeit(lambda: ours(base, cand), args.repeat)
    t_np = timeit(lambda: plain_numpy(wb, wc), args.repeat)
    print(f"stats + compare, 1088-clip pair, tau {TAU} (median of {args.repeat})")
    print(f"  omni_tasks (full stats, modes, Newcombe, t-interval): {t_ours * 1e3:8.2f} ms")
    print(f"  plain numpy (tail, capped mean, McNemar only):        {t_np * 1e3:8.2f} ms")
    print(f"  ratio ours / numpy: {t_ours / t_np:.1f}x")


if __name__ == "__main__":
    main()
