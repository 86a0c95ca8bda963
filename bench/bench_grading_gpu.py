"""GPU grading throughput of the transformers backend: one clip per call vs cross-clip batches.

Runs on a GPU machine with only torch + transformers + numpy (no hub, no omni_tasks install):
a randomly initialised Whisper of the large-v3 shape (weights do not change the arithmetic),
decoding forced to an equal number of tokens per clip so every configuration does the same
work, on real speech clips prepared here by `bench/bench_grading.py --export-clips FILE`.
It reproduces the transformers backend's calls (feature extractor with one padded 30 s window,
`generate` with forced English transcription, greedy) and reports clips/s and, at fp32, how
many clips' tokens batching changed. With `prefetch_features` the next batch's features are
computed on a CPU thread while the GPU decodes: it measures what feature extraction costs the
batched path (about 4 % at batch 64 on an H200), which is why the backend does not do it.

    python bench/bench_grading_gpu.py --clips bench/.data/clips16k.npz --out result.json

`--longform N` adds the harness 0.30 policy (`whole-timestamps`) on a mix of N clips, 10 % of
them over 30 s (31-90 s): the harness's pattern (one clip per call: long clips with
`truncation=False, padding="longest", return_timestamps=True`) against the backend's batching
(short with short, long with long, the attention mask giving each clip's length). Decoding is
forced to `--tokens` tokens per 30 s window, so random weights emit no end timestamp and every
window is decoded: a fixed pattern (seeking on predicted timestamps is what random weights
cannot show). Clips are seeded noise: content does not change the arithmetic.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import transformers
from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

LARGE_V3 = {
    "d_model": 1280,
    "encoder_layers": 32,
    "decoder_layers": 32,
    "encoder_attention_heads": 20,
    "decoder_attention_heads": 20,
    "encoder_ffn_dim": 5120,
    "decoder_ffn_dim": 5120,
    "num_mel_bins": 128,
    "vocab_size": 51866,
}
TINY = {
    "d_model": 64,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "num_mel_bins": 80,
    "vocab_size": 51866,
}
SOT, EN, TRANSLATE, TRANSCRIBE, NO_TS, EOT = 50258, 50259, 50358, 50359, 50363, 50257  # v3 ids


def build(shape: dict[str, int], device: str) -> WhisperForConditionalGeneration:
    config = WhisperConfig(
        max_target_positions=448,
        decoder_start_token_id=SOT,
        eos_token_id=EOT,
        pad_token_id=EOT,
        bos_token_id=EOT,
        **shape,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = WhisperForConditionalGeneration(config).eval()
    g = model.generation_config
    g.is_multilingual = True
    g.lang_to_id = {"<|en|>": EN}
    g.task_to_id = {"transcribe": TRANSCRIBE, "translate": TRANSLATE}
    g.no_timestamps_token_id = NO_TS
    g.begin_suppress_tokens = None
    g.suppress_tokens = None
    return model


@torch.inference_mode()
def grade(model, fe, clips, batch: int, dtype, tokens: int, device: str, prefetch: bool = False):
    """`prefetch`: the next batch's log-mel features are computed on a CPU thread while the GPU
    decodes this one (the same features, so the same tokens)."""
    from concurrent.futures import ThreadPoolExecutor

    def features(i: int):
        return fe(clips[i : i + batch], sampling_rate=16_000, return_tensors="pt").input_features

    out: list[list[int]] = []
    starts = list(range(0, len(clips), batch))
    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(features, starts[0]) if prefetch else None
        for k, i in enumerate(starts):
            if ahead is not None:
                feats = ahead.result()
                ahead = pool.submit(features, starts[k + 1]) if k + 1 < len(starts) else None
            else:
                feats = features(i)
            ids = model.generate(
                feats.to(device, dtype),
                language="en",
                task="transcribe",
                do_sample=False,
                num_beams=1,
                min_new_tokens=tokens,
                max_new_tokens=tokens,
            )
            out.extend(ids.tolist())
    return out


@torch.inference_mode()
def grade_whole(model, fe, clips, batch: int, tokens: int, device: str):
    """The 0.30 call: clips up to 30 s as one window each, longer ones whole with timestamps;
    short and long clips never share a call."""
    out: dict[int, list[int]] = {}
    for long in (False, True):
        group = [i for i, c in enumerate(clips) if (len(c) > 30 * 16_000) == long]
        for j in range(0, len(group), batch):
            idx = group[j : j + batch]
            extra = {"truncation": False, "padding": "longest"} if long else {}
            inputs = fe(
                [clips[i] for i in idx],
                sampling_rate=16_000,
                return_tensors="pt",
                return_attention_mask=True,
                **extra,
            )
            ids = model.generate(
                inputs.input_features.to(device, torch.float32),
                attention_mask=inputs.attention_mask.to(device),
                language="en",
                task="transcribe",
                do_sample=False,
                num_beams=1,
                min_new_tokens=tokens,
                max_new_tokens=tokens,
                **({"return_timestamps": True} if long else {}),
            )
            seqs = ids["sequences"] if isinstance(ids, dict) else ids
            for i, row in zip(idx, seqs.tolist(), strict=True):
                out[i] = [t for t in row if t != EOT]
    return [out[i] for i in range(len(clips))]


def longform(model, fe, n: int, tokens: int, device: str) -> dict:
    rng = np.random.default_rng(0)
    seconds = [rng.uniform(31, 90) if i % 10 == 9 else rng.uniform(4, 15) for i in range(n)]
    clips = [(0.05 * rng.standard_normal(int(s * 16_000))).astype(np.float32) for s in seconds]
    model = model.to(torch.float32)
    runs = {}
    for batch in (1, 16):
        grade_whole(model, fe, clips[:2] + clips[9:10], batch, tokens, device)  # warm-up
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        ids = grade_whole(model, fe, clips, batch, tokens, device)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        runs[batch] = (
            time.perf_counter() - t0,
            ids,
            torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None,
        )
    (one_s, one_ids, one_mem), (b_s, b_ids, b_mem) = runs[1], runs[16]
    long = [i for i, s in enumerate(seconds) if s > 30]
    return {
        "policy": "whole-timestamps",
        "precision": "fp32",
        "clips": n,
        "long_clips": len(long),
        "audio_s": round(sum(seconds), 1),
        "tokens_per_window": tokens,
        "one_per_call_s": round(one_s, 3),
        "batched16_s": round(b_s, 3),
        "batched_over_one_per_call": round(one_s / b_s, 2),
        "changed_by_batching": sum(a != b for a, b in zip(one_ids, b_ids, strict=True)),
        "changed_long": sum(one_ids[i] != b_ids[i] for i in long),
        "peak_gib_one": None if one_mem is None else round(one_mem, 2),
        "peak_gib_batched": None if b_mem is None else round(b_mem, 2),
    }


def timed(model, fe, clips, batch, dtype, tokens, device, prefetch=False):
    grade(model, fe, clips[: min(batch, 4)], batch, dtype, tokens, device)  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    ids = grade(model, fe, clips, batch, dtype, tokens, device, prefetch)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--clips", default=None, help="npz with an array 'clips' (16 kHz, padded)")
    ap.add_argument("--lengths", default=None)
    ap.add_argument("--n", type=int, default=128, help="clips to grade per configuration")
    ap.add_argument("--tokens", type=int, default=32, help="decoded tokens per clip (forced)")
    ap.add_argument("--shape", choices=["large-v3", "tiny"], default="large-v3")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--longform", type=int, default=0, help="clips of the whole-timestamps mix")
    args = ap.parse_args()
    transformers.logging.set_verbosity_error()

    clips: list[np.ndarray] = []
    if args.clips:
        data = np.load(args.clips)
        clips = [
            data["clips"][i, : data["lengths"][i]].astype(np.float32)
            for i in range(len(data["lengths"]))
        ]
        clips = (clips * (args.n // len(clips) + 1))[: args.n]
    shape = LARGE_V3 if args.shape == "large-v3" else TINY
    fe = WhisperFeatureExtractor(feature_size=shape["num_mel_bins"])
    model = build(shape, args.device)
    runs = [
        ("fp32", torch.float32, 1, False),
        ("fp32", torch.float32, 64, False),
        ("fp32", torch.float32, 64, True),
        ("fp32", torch.float32, 128, True),
    ]
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    results = {
        "device": device,
        "shape": args.shape,
        "clips": args.n,
        "tokens_per_clip": args.tokens,
        "runs": [],
    }
    baseline_ids = None
    baseline_s = None
    for precision, dtype, batch, prefetch in (
        [*runs, ("bf16", torch.bfloat16, 128, True)] if clips else []
    ):
        m = model.to(dtype)
        seconds, ids = timed(m, fe, clips, batch, dtype, args.tokens, args.device, prefetch)
        entry = {
            "precision": precision,
            "batch": batch,
            "prefetch_features": prefetch,
            "seconds": round(seconds, 3),
            "clips_per_s": round(args.n / seconds, 2),
        }
        if baseline_ids is None:
            baseline_ids, baseline_s = ids, seconds
        else:
            entry["speedup_vs_fp32_batch1"] = round(baseline_s / seconds, 2)
            entry["outputs_changed_vs_fp32_batch1"] = sum(
                a != b for a, b in zip(ids, baseline_ids, strict=True)
            )
        results["runs"].append(entry)
        print(json.dumps(entry), flush=True)
    if args.longform:
        results["longform"] = longform(model, fe, args.longform, args.tokens, args.device)
        print(json.dumps(results["longform"]), flush=True)
    print(json.dumps(results, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
