"""The speaker-embedding proxy's agreement with the simulator's planted voice leaks, and what it
costs: the concurrency experiment on seed-TTS (real piper speech in 3 reference voices
round-robin, heard by faster-whisper tiny.en) at levels 1 and 8, on the `batch-variant` profile
(a planted share of co-batched outputs voiced in another request's reference) and on `main`
(no leak). Prints leak recall and precision against the planting (batching.leaks, the
simulator's own rule), the margins, and the proxy's labelling time as a ratio to the run it
labels, measured in the same run.

    .venv/bin/python bench/bench_voice_proxy.py [--clips 96]
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import scratch_db

from omni_tasks.dataset import load_dataset
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.concurrency import ConcurrencyRequest, run_concurrency, voice_labels
from omni_tasks.jobs.statistics import load_graded_run
from omni_tasks.synthesis import batching, protocol
from omni_tasks.synthesis.profiles import load_profile


def planted(profile: str, n: int) -> set[str]:
    template = protocol.prompt_template("seed-tts-default")
    return {
        u.utt_id
        for u in load_dataset("demo").utterances[:n]
        if batching.leaks(load_profile(profile), protocol.request_body(u.target_text, template))
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=96)
    args = ap.parse_args()
    policy = load_policy()
    with scratch_db() as conn:
        for profile in ("batch-variant", "main"):
            req = ConcurrencyRequest(
                "seed_tts_en",
                f"simulator:{profile}",
                (1, 8),
                limit=args.clips,
                options={"voices": 3},
            )
            started = time.perf_counter()
            result = run_concurrency(conn, req, policy)
            total = time.perf_counter() - started
            (c8,) = result.comparisons
            assert c8.voice is not None
            truth = planted(profile, args.clips)
            found = {leak.item for leak in c8.voice.leaks}
            hits = len(found & truth)
            # The labelling alone, again, for its share of the experiment's time.
            clips = {k: load_graded_run(conn, v).clips for k, v in result.runs.items()}
            started = time.perf_counter()
            voice_labels(req, clips, lambda _line: None)
            labelling = time.perf_counter() - started
            leaked = [leak.margin for leak in c8.voice.leaks]
            print(f"{profile}: {args.clips} clips × 2 levels, {total:.1f} s")
            print(
                f"  planted leaks {len(truth)}, labelled leaks {len(found)}, agreeing {hits}: "
                f"recall {hits / len(truth) if truth else float('nan'):.2f}, precision "
                f"{hits / len(found) if found else float('nan'):.2f}"
            )
            print(
                f"  wrong voice alone {c8.voice.wrong_alone}, co-batched {c8.voice.wrong_batched}"
                + (
                    f"; leaked margins median {statistics.median(leaked):+.2f}"
                    if leaked
                    else f"; leak rate < {c8.voice.leak_upper:.1%} at 95 %"
                )
            )
            print(
                f"  proxy labelling {labelling:.1f} s for {2 * args.clips} outputs: ratio "
                f"labelling / experiment {labelling / total:.3f}"
            )


if __name__ == "__main__":
    main()
