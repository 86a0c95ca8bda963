"""CPU grading throughput (faster-whisper tiny.en, the demo grader): one clip per call vs
cross-clip batches, on the same real speech clips (piper reading the demo corpus), with the
transcripts compared and an encoder-only bound measured on the same clips.

    .venv/bin/python bench/bench_grading.py [--clips 32] [--batch 8 16]
    .venv/bin/python bench/bench_grading.py --export-clips bench/.data/clips16k.npz

Prints clips/s per configuration and ratios against one-at-a-time measured in the same run.
`--export-clips` writes the clips for the GPU benchmark (bench/bench_grading_gpu.py).
Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import ctranslate2
import numpy as np

from omni_tasks.dataset import load_dataset
from omni_tasks.evidence.audio import WHISPER_RATE
from omni_tasks.grading.asr import GraderSpec
from omni_tasks.grading.backends import load_grader
from omni_tasks.grading.wer import score
from omni_tasks.voice import speak


def clips_of_demo(n: int) -> tuple[list[str], list[np.ndarray]]:
    utts = load_dataset("demo").limit(n)
    return [u.target_text for u in utts], [speak(u.target_text, WHISPER_RATE) for u in utts]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--clips", type=int, default=32)
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--export-clips", type=Path, default=None)
    args = ap.parse_args()

    refs, clips = clips_of_demo(args.clips)
    if args.export_clips:
        lengths = np.array([len(c) for c in clips])
        padded = np.zeros((len(clips), lengths.max()), dtype=np.float32)
        for i, c in enumerate(clips):
            padded[i, : len(c)] = c
        args.export_clips.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.export_clips, clips=padded, lengths=lengths)
        print(f"wrote {len(clips)} clips to {args.export_clips}")
        return

    grader = load_grader(GraderSpec())
    backend = grader.backend
    backend.transcribe(clips[:2])  # warm-up

    def run(batch: int) -> tuple[float, list[str]]:
        t0 = time.perf_counter()
        out: list[str] = []
        for i in range(0, len(clips), batch):
            out.extend(backend.transcribe(clips[i : i + batch]))
        return time.perf_counter() - t0, out

    base_s, base_txt = run(1)
    rows = [{"config": "one clip per call", "seconds": base_s, "ratio": 1.0, "changed": 0}]
    for b in args.batch:
        s, txt = run(b)
        changed = sum(x != y for x, y in zip(txt, base_txt, strict=True))
        rows.append({"config": f"batch {b}", "seconds": s, "ratio": base_s / s, "changed": changed})

    # Encoder-only bound: the padded 30 s encoder pass that every decode pays, batched.
    feats = np.stack([backend.features(c) for c in clips]).astype(np.float32)
    model = backend._model.model  # the CTranslate2 Whisper inside faster-whisper
    t0 = time.perf_counter()
    for i in range(0, len(clips), max(args.batch)):
        model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[i : i + max(args.batch)]))
        )
    enc_s = time.perf_counter() - t0
    rows.append(
        {
            "config": f"encoder only, batch {max(args.batch)} (bound)",
            "seconds": enc_s,
            "ratio": base_s / enc_s,
            "changed": None,
        }
    )

    mean_wer = float(np.mean([score(r, h).wer for r, h in zip(refs, base_txt, strict=True)]))
    print(f"grader {grader.grader_id}; {len(clips)} piper clips of the demo corpus on CPU")
    print(
        f"{'configuration':40} {'clips/s':>8} {'vs one-at-a-time':>17} {'transcripts changed':>20}"
    )
    for r in rows:
        changed = "-" if r["changed"] is None else f"{r['changed']}/{len(clips)}"
        print(
            f"{r['config']:40} {len(clips) / r['seconds']:8.2f} {r['ratio']:16.2f}x {changed:>20}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"mean WER of one-at-a-time transcripts: {mean_wer:.4f}; process peak RSS {peak_mb:.0f} MB"
    )
    print(json.dumps({"clips": len(clips), "mean_wer": mean_wer, "rows": rows}))


if __name__ == "__main__":
    main()
