"""openai-whisper backend: the same model family, with either window policy.

`truncate30` pads or trims to one 30 s window and decodes clips as one batch (parity);
`longform` runs `transcribe` on the whole clip (diagnosis only; not comparable with history).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import whisper

from omni_tasks.grading.asr import GraderSpec, weights_label, window


class OpenAIWhisperBackend:
    runtime: str | None = None

    def __init__(self, spec: GraderSpec) -> None:
        self.spec = spec
        path = Path(str(spec.model))
        self.model_label = weights_label(path.stem, [path]) if path.is_file() else str(spec.model)
        self._model = whisper.load_model(str(spec.model), device=spec.device)

    def features(self, audio: np.ndarray) -> np.ndarray:
        heard = window(audio, self.spec.window)
        if self.spec.window == "truncate30":
            heard = whisper.pad_or_trim(heard)
        mel = whisper.log_mel_spectrogram(heard, n_mels=self._model.dims.n_mels)
        return np.asarray(mel.cpu())

    @torch.inference_mode()
    def transcribe(self, clips: Sequence[np.ndarray]) -> list[str]:
        if not clips:
            return []
        beam = self.spec.beam_size if self.spec.beam_size > 1 else None
        # English-only models ignore the language; None would trigger language detection.
        decoding: dict[str, Any] = {
            "language": self.spec.language,
            "fp16": self.spec.precision == "fp16",
            "temperature": 0.0,
            "beam_size": beam,
        }
        if self.spec.window == "longform":
            return [
                str(
                    self._model.transcribe(c, condition_on_previous_text=False, **decoding)["text"]
                ).strip()
                for c in clips
            ]
        mel = torch.from_numpy(np.stack([self.features(c) for c in clips])).to(self._model.device)
        options = whisper.DecodingOptions(
            task="transcribe",
            sample_len=self.spec.max_new_tokens,
            without_timestamps=True,
            **decoding,
        )
        results = whisper.decode(self._model, mel, options)
        return [r.text.strip() for r in results]
