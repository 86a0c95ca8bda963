"""Grade while synthesizing: wall time of synthesis alone, synthesize-then-grade (sequential) and
the pipeline, from one run, plus what per-clip row writes cost against COPY.

    .venv/bin/python bench/bench_pipeline.py [--clips 200] [--synthesis-s 180] [--row-writes 1088]
    .venv/bin/python bench/bench_pipeline.py --demo          # the demo's nightly, end to end

The stand-in server answers like vLLM-Omni (the same stream protocol) with pre-rendered piper
audio of each sentence and a per-clip latency drawn from a log-normal distribution (median 1,
σ 0.5: a long right tail, as Qwen3-Omni's per-clip latency has), scaled so synthesis alone
takes about `--synthesis-s` at the client's concurrency (10, the harness's). It sleeps, using no
CPU, so the grader has both cores. The grader is the demo's (faster-whisper tiny.en int8, CPU,
batch 8). A second case makes synthesis 5× faster than the grader to show the slow-grader
regime. `--demo` runs the demo nightly's two branches against the simulator (which does spend
CPU on piper) sequential vs pipelined. Figures go to bench/results/pipeline.json.
Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import math
import os
import random
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
from common import bare_run, scratch_db
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

RESULTS = Path(__file__).resolve().parent / "results" / "pipeline.json"
NIGHT = dt.date(2026, 11, 30)


def stand_in(audio: dict[str, np.ndarray], latency: dict[str, float]) -> Starlette:
    """vLLM-Omni's stream for each sentence: its text, then its pre-rendered audio in 1 s
    chunks spread over the clip's latency (sleeps only)."""
    from omni_tasks.evidence.audio import STORE_RATE, wav_bytes
    from omni_tasks.synthesis import protocol

    async def chat(request: Request) -> Response:
        body = await request.json()
        text = protocol.target_text(body)
        samples, total = audio[text], latency[text]
        w = protocol.StreamWriter("stand-in", "chatcmpl-" + uuid.uuid4().hex[:24], 0)

        async def stream() -> AsyncIterator[bytes]:
            yield w.role("text")
            yield w.text(text, len(text.split()) * 2, "stop")
            yield w.role("audio")
            chunks = [samples[i : i + STORE_RATE] for i in range(0, len(samples), STORE_RATE)]
            for chunk in chunks:
                await asyncio.sleep(total / len(chunks))
                yield w.audio(wav_bytes(chunk, STORE_RATE), STORE_RATE)
            yield w.done()

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def models(_: Request) -> Response:
        return JSONResponse({"data": [{"id": "stand-in", "object": "model"}]})

    return Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)]
    )


def write_costs(conn: Any, n: int) -> dict[str, float]:
    """Per-clip INSERT + commit (what the pipeline does) against one COPY of all clips."""
    from omni_tasks.records import ClipAudio
    from omni_tasks.store import runs

    clips = [
        ClipAudio(f"u{i:05d}", i, "A sentence of the corpus.", "ok", f"/a/{i}.wav", 3.2, 8.1)
        for i in range(n)
    ]
    run_id, _ = bare_run(conn, "per-clip")
    conn.commit()
    t0 = time.perf_counter()
    for c in clips:
        runs.insert_clip_audio(conn, run_id, c)
        conn.commit()
    per_clip = time.perf_counter() - t0
    run_id, _ = bare_run(conn, "copy")
    conn.commit()
    t0 = time.perf_counter()
    runs.copy_clip_audio(conn, run_id, clips)
    conn.commit()
    copy = time.perf_counter() - t0
    return {
        "clips": n,
        "per_clip_s": round(per_clip, 3),
        "copy_s": round(copy, 4),
        "per_clip_ms_each": round(1000 * per_clip / n, 3),
        "per_clip_over_copy": round(per_clip / copy, 1),
    }


def case(conn: Any, grader: Any, utts: list[Any], url: str, label: str) -> dict[str, float]:
    """Synthesis alone, sequential, pipelined: wall seconds of each, on the same stand-in."""
    from omni_tasks.benchmarks.seed_tts.pipeline import clip_audio, run_pipelined, run_status
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest, client_config, run_spec
    from omni_tasks.dataset import load_dataset
    from omni_tasks.grading.grade import grade_run
    from omni_tasks.store import runs
    from omni_tasks.synthesis.client import synthesize_all

    ds = load_dataset("demo")
    req = BenchRequest(target=url, branch="main", commit="c0ffee", nightly=NIGHT, limit=len(utts))
    cfg = client_config(req, url, ds.lang)
    spec = run_spec(req, ds, len(utts))

    def synthesize_and_store(key: str) -> None:
        results = asyncio.run(synthesize_all(utts, cfg))
        clips = [clip_audio(key, i, r) for i, r in enumerate(results)]
        runs.save_run(conn, dataclasses.replace(spec, status=run_status(clips)), clips, run_key=key)
        conn.commit()

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    synthesize_and_store(f"{label}-synthesis")
    out["synthesis_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    synthesize_and_store(f"{label}-sequential")
    grade_run(conn, f"{label}-sequential", grader, show_progress=False)
    out["sequential_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_pipelined(conn, f"{label}-pipelined", spec, utts, cfg, grader)
    out["pipelined_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    grade_run(conn, f"{label}-synthesis", grader, show_progress=False)
    out["grading_only_s"] = time.perf_counter() - t0
    seq = runs.latest_grading(conn, runs.get_run(conn, f"{label}-sequential").run_id, "")[0]
    pip = runs.latest_grading(conn, runs.get_run(conn, f"{label}-pipelined").run_id, "")[0]

    def heard(gid: int) -> list[tuple[str, str]]:
        rows = conn.execute(
            "SELECT utt_id, hypothesis FROM omni.clip_grade WHERE grading_id = %s ORDER BY utt_id",
            (gid,),
        )
        return [(r["utt_id"], r["hypothesis"]) for r in rows]

    out["transcripts_differing"] = sum(a != b for a, b in zip(heard(seq), heard(pip), strict=True))
    n = len(utts)
    out.update(
        synthesis_clips_per_s=n / out["synthesis_s"],
        grading_clips_per_s=n / out["grading_only_s"],
        pipelined_over_synthesis=out["pipelined_s"] / out["synthesis_s"],
        sequential_over_synthesis=out["sequential_s"] / out["synthesis_s"],
    )
    return {k: round(v, 3) for k, v in out.items()}


def stand_in_cases(args: argparse.Namespace) -> dict[str, Any]:
    from omni_tasks.dataset import load_dataset
    from omni_tasks.grading.asr import GraderSpec
    from omni_tasks.grading.backends import load_grader
    from omni_tasks.synthesis.simulator import serve_in_thread
    from omni_tasks.voice import speak

    utts = list(load_dataset("demo").utterances)
    utts = [
        dataclasses.replace(u, utt_id=f"{u.utt_id}-{i // len(utts)}")
        for i, u in enumerate(utts * math.ceil(args.clips / len(utts)))
    ][: args.clips]
    texts = {u.target_text for u in utts}
    print(f"pre-rendering {len(texts)} sentences with piper …", flush=True)
    audio = {t: speak(t) for t in texts}
    rng = random.Random(7)
    raw = {t: rng.lognormvariate(0.0, 0.5) for t in texts}
    # Scale so that n clips at concurrency 10 take about synthesis_s.
    mean = sum(raw[u.target_text] for u in utts) / len(utts)
    grader = load_grader(GraderSpec())
    grader.backend.transcribe([audio[next(iter(texts))][:16000]])  # warm-up
    out: dict[str, Any] = {"clips": len(utts), "concurrency": 10, "grader": grader.grader_id}
    with scratch_db() as conn:
        out["row_writes"] = write_costs(conn, args.row_writes)
        print(json.dumps(out["row_writes"]), flush=True)
        for label, target_s in (
            ("fast_grader", args.synthesis_s),
            ("slow_grader", args.synthesis_s / 5),
        ):
            scale = target_s * 10 / (len(utts) * mean)
            latency = {t: v * scale for t, v in raw.items()}
            with serve_in_thread(stand_in(audio, latency)) as url:
                out[label] = case(conn, grader, utts, url, label)
            print(label, json.dumps(out[label]), flush=True)
    return out


def demo_nightly() -> dict[str, Any]:
    """The demo nightly's run_branch for both branches: sequential vs pipelined, same night."""
    from omni_tasks.benchmarks.seed_tts.pipeline import clip_audio, run_status
    from omni_tasks.benchmarks.seed_tts.run import (
        BenchRequest,
        run_benchmark,
        run_spec,
        synthesize,
        utterances_of,
    )
    from omni_tasks.dataset import load_dataset
    from omni_tasks.grading.asr import GraderSpec
    from omni_tasks.grading.backends import load_grader
    from omni_tasks.grading.grade import grade_run
    from omni_tasks.store import runs

    grader = load_grader(GraderSpec())
    out: dict[str, Any] = {"sequential_s": 0.0, "pipelined_s": 0.0}
    with scratch_db() as conn:
        for branch, profile in (("main", "main"), ("rebase", "rebase-demo")):
            req = BenchRequest(
                target=f"simulator:{profile}",
                branch=branch,
                commit="c0ffee",
                nightly=NIGHT,
                seed=42,
                run_key=f"seq-{branch}",
            )
            ds = load_dataset(req.dataset)
            t0 = time.perf_counter()
            results = synthesize(req, ds, show_progress=False)
            clips = [clip_audio(f"seq-{branch}", i, r) for i, r in enumerate(results)]
            spec = dataclasses.replace(
                run_spec(req, ds, len(utterances_of(req, ds))), status=run_status(clips)
            )
            runs.save_run(conn, spec, clips, run_key=f"seq-{branch}")
            grade_run(conn, f"seq-{branch}", grader, show_progress=False)
            out["sequential_s"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            run_benchmark(
                conn, dataclasses.replace(req, run_key=f"pip-{branch}"), grader, show_progress=False
            )
            out["pipelined_s"] += time.perf_counter() - t0
            print(branch, json.dumps(out), flush=True)
    out["pipelined_over_sequential"] = out["pipelined_s"] / out["sequential_s"]
    return {k: round(v, 3) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--clips", type=int, default=200)
    ap.add_argument("--synthesis-s", type=float, default=180.0)
    ap.add_argument("--row-writes", type=int, default=1088, help="clips of the row-write costs")
    ap.add_argument("--demo", action="store_true", help="the demo nightly, end to end")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the figures go")
    args = ap.parse_args()
    os.environ.setdefault("OMNI_HOME", tempfile.mkdtemp(prefix="omni-bench-"))
    previous = json.loads(args.results.read_text()) if args.results.is_file() else {}
    if args.demo:
        previous["demo_nightly"] = demo_nightly()
    else:
        previous.update(stand_in_cases(args))
        fast = previous["fast_grader"]
        previous["pipelined_over_synthesis"] = fast["pipelined_over_synthesis"]
        previous["sequential_over_synthesis"] = fast["sequential_over_synthesis"]
    previous["cpu_cores"] = os.cpu_count()
    args.results.write_text(json.dumps(previous, indent=2) + "\n")
    print(json.dumps(previous, indent=2))


if __name__ == "__main__":
    main()
