"""Randomly initialised Whisper models of a given shape, built offline.

Real checkpoints need a model hub; these stand in where only plumbing matters (the backend
and window-policy tests, tiny shapes). They use Whisper's real tokenizer from the offline
tiny.en package, so prompts and decoding are the real ones; their transcripts are noise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omni_tasks.offline_models import whisper_tiny_en_dir

# Special-token ids of Whisper's tokenizer (identical in the English and multilingual ones up
# to <|notimestamps|> for the ids used here).
SOT, EN, TRANSLATE, TRANSCRIBE, NO_TIMESTAMPS, EOT = 50257, 50258, 50357, 50358, 50362, 50256

TINY_HF = {
    "d_model": 64,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "num_mel_bins": 80,
}
LARGE_V3_HF = {
    "d_model": 1280,
    "encoder_layers": 32,
    "decoder_layers": 32,
    "encoder_attention_heads": 20,
    "decoder_attention_heads": 20,
    "encoder_ffn_dim": 5120,
    "decoder_ffn_dim": 5120,
    "num_mel_bins": 128,
}
TINY_OPENAI_DIMS = {
    "n_mels": 80,
    "n_vocab": 51864,
    "n_audio_ctx": 1500,
    "n_audio_state": 64,
    "n_audio_head": 2,
    "n_audio_layer": 1,
    "n_text_ctx": 448,
    "n_text_state": 64,
    "n_text_head": 2,
    "n_text_layer": 1,
}


def build_transformers_whisper(
    out: Path, shape: dict[str, Any] | None = None, seed: int = 0, vocab_size: int | None = None
) -> Path:
    """A `from_pretrained` directory: weights, config, processor and a multilingual-style
    generation config (forced English transcription works as with the real large-v3)."""
    import torch
    from transformers import (  # type: ignore[attr-defined]
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizerFast,
    )

    shape = dict(TINY_HF if shape is None else shape)
    tokenizer = WhisperTokenizerFast(tokenizer_file=str(whisper_tiny_en_dir() / "tokenizer.json"))
    config = WhisperConfig(
        vocab_size=vocab_size or len(tokenizer),
        max_target_positions=448,
        decoder_start_token_id=SOT,
        eos_token_id=EOT,
        pad_token_id=EOT,
        bos_token_id=EOT,
        **shape,
    )
    torch.manual_seed(seed)
    WhisperForConditionalGeneration(config).save_pretrained(out)
    WhisperProcessor(
        WhisperFeatureExtractor(feature_size=shape["num_mel_bins"]), tokenizer
    ).save_pretrained(out)
    gen_path = out / "generation_config.json"
    gen = json.loads(gen_path.read_text())
    gen.pop("_from_model_config", None)  # else from_pretrained rebuilds it from the model config
    gen.update(
        is_multilingual=True,
        lang_to_id={"<|en|>": EN},
        task_to_id={"transcribe": TRANSCRIBE, "translate": TRANSLATE},
        no_timestamps_token_id=NO_TIMESTAMPS,
        max_length=448,
    )
    gen_path.write_text(json.dumps(gen, indent=1))
    return out


def build_openai_whisper(out: Path, dims: dict[str, int] | None = None, seed: int = 0) -> Path:
    """A `whisper.load_model(path)` checkpoint: {"dims", "model_state_dict"}."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    dims = dict(TINY_OPENAI_DIMS if dims is None else dims)
    torch.manual_seed(seed)
    model = Whisper(ModelDimensions(**dims))
    torch.save({"dims": dims, "model_state_dict": model.state_dict()}, out)
    return out
