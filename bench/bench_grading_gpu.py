"""GPU grading throughput of the transformers backend: one clip per call vs cross-clip batches.

Runs on a GPU machine with only torch + transformers + numpy (no hub, no omni_tasks install):
a randomly initialised Whisper of the large-v3 shape (weights do not change the arithmetic),
decoding forced to an equal number of tokens per clip so every configuration does the same
work, on real speech clips prepared here by `bench/bench_grading.py --export-clips FILE`.
It reproduces the transformers backend's calls (feature extractor with one padded 30 s window,
`generate` with forced English transcription, greedy) and reports clips/s and, at fp32, how
many clips' tokens batching changed.

    python bench/bench_grading_gpu.py --clips bench/.data/clips16k.npz --out result.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import transformers
from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

LARGE_V3 = {"d_model": 1280, "encoder_layers": 32, "decoder_layers": 32,
            "encoder_attention_heads": 20, "decoder_attention_heads": 20,
            "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120, "num_mel_bins": 128,
            "vocab_size": 51866}  # fmt: skip
TINY = {"d_model": 64, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
        "num_mel_bins": 80, "vocab_size": 51866}  # fmt: skip
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
def grade(model, fe, clips, batch: int, dtype, tokens: int, device: str):
    out: list[list[int]] = []
    for i in range(0, len(clips), batch):
        feats = fe(clips[i : i + batch], sampling_rate=16_000, return_tensors="pt").input_features
        ids = model.generate(feats.to(device, dtype), language="en", task="transcribe",
                             do_sample=False, num_beams=1, min_new_tokens=tokens,
                             max_new_tokens=tokens)  # fmt: skip
        out.extend(ids.tolist())
    return out


def timed(model, fe, clips, batch, dtype, tokens, device):
    grade(model, fe, clips[: min(batch, 4)], batch, dtype, tokens, device)  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    ids = grade(model, fe, clips, batch, dtype, tokens, device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--clips", required=True, help="npz with an array 'clips' (16 kHz, padded)")
    ap.add_argument("--lengths", default=None)
    ap.add_argument("--n", type=int, default=128, help="clips to grade per configuration")
    ap.add_argument("--tokens", type=int, default=32, help="decoded tokens per clip (forced)")
    ap.add_argument("--shape", choices=["large-v3", "tiny"], default="large-v3")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    transformers.logging.set_verbosity_error()

    data = np.load(args.clips)
    clips = [
        data["clips"][i, : data["lengths"][i]].astype(np.float32)
        for i in range(len(data["lengths"]))
    ]
    clips = (clips * (args.n // len(clips) + 1))[: args.n]
    shape = LARGE_V3 if args.shape == "large-v3" else TINY
    fe = WhisperFeatureExtractor(feature_size=shape["num_mel_bins"])
    model = build(shape, args.device)
    runs = [("fp32", torch.float32, 1), ("fp32", torch.float32, 64)]
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    results = {"device": device, "shape": args.shape, "clips": args.n,
               "tokens_per_clip": args.tokens, "runs": []}  # fmt: skip
    baseline_ids = None
    baseline_s = None
    for precision, dtype, batch in [*runs, ("bf16", torch.bfloat16, 128)]:
        m = model.to(dtype)
        seconds, ids = timed(m, fe, clips, batch, dtype, args.tokens, args.device)
        entry = {"precision": precision, "batch": batch, "seconds": round(seconds, 3),
                 "clips_per_s": round(args.n / seconds, 2)}  # fmt: skip
        if baseline_ids is None:
            baseline_ids, baseline_s = ids, seconds
        else:
            entry["speedup_vs_fp32_batch1"] = round(baseline_s / seconds, 2)
            entry["outputs_changed_vs_fp32_batch1"] = sum(
                a != b for a, b in zip(ids, baseline_ids, strict=True)
            )
        results["runs"].append(entry)
        print(json.dumps(entry), flush=True)
    print(json.dumps(results, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
