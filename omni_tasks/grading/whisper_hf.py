"""transformers backend: parity with the reference harness (run_wer.py / vLLM-Omni).

fp32, forced English transcription, greedy decoding of one padded 30 s window per clip (the
feature extractor truncates longer audio). Every clip is one 30 s window, so batching clips
changes no input; it can only change floating-point reduction order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import WhisperForConditionalGeneration, WhisperProcessor

from omni_tasks.grading.asr import GraderSpec, weights_label

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _label(model: str) -> str:
    path = Path(model)
    if not path.is_dir():
        return model  # a hub id; its revision is the hub's business
    files = [*path.glob("*.safetensors"), *path.glob("*.bin"), path / "config.json"]
    return weights_label(path.name, [f for f in files if f.is_file()])


class TransformersBackend:
    def __init__(self, spec: GraderSpec) -> None:
        transformers.logging.set_verbosity_error()
        self.spec = spec
        self.model_label = _label(str(spec.model))
        self._dtype = _DTYPES[str(spec.precision)]
        self._processor = WhisperProcessor.from_pretrained(str(spec.model))
        model = WhisperForConditionalGeneration.from_pretrained(str(spec.model), dtype=self._dtype)
        self._model = model.to(spec.device).eval()  # type: ignore[arg-type]
        self._multilingual = bool(getattr(self._model.generation_config, "is_multilingual", True))

    def features(self, audio: np.ndarray) -> np.ndarray:
        out = self._processor.feature_extractor(audio, sampling_rate=16_000, return_tensors="np")
        return np.asarray(out.input_features[0])

    @torch.inference_mode()
    def transcribe(self, clips: Sequence[np.ndarray]) -> list[str]:
        if not clips:
            return []
        feats = self._processor.feature_extractor(
            list(clips), sampling_rate=16_000, return_tensors="pt"
        ).input_features.to(self.spec.device, self._dtype)
        forced = (
            {"language": self.spec.language, "task": "transcribe"} if self._multilingual else {}
        )
        tokens = self._model.generate(
            feats,
            do_sample=False,
            num_beams=self.spec.beam_size,
            max_new_tokens=self.spec.max_new_tokens,
            **forced,
        )
        texts = self._processor.batch_decode(tokens, skip_special_tokens=True)
        return [t.strip() for t in texts]
