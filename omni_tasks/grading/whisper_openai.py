"""openai-whisper backend: the same model family, with either window policy.

`truncate30` pads or trims to one 30 s window and decodes clips as one batch (parity);
`longform` runs `transcribe` on the whole clip (diagnosis only; not comparable with history).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
        self._fp16 = spec.precision == "fp16"
        # English-only models ignore the language; None would trigger language detection.
        self._language = spec.language

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
        if self.spec.window == "longform":
            return [
                str(
                    self._model.transcribe(
                        c,
                        language=self._language,
                        fp16=self._fp16,
                        temperature=0.0,
                        beam_size=beam,
                        condition_on_previous_text=False,
                    )["text"]
                ).strip()
                for c in clips
            ]
        mel = torch.from_numpy(np.stack([self.features(c) for c in clips])).to(self._model.device)
        options = whisper.DecodingOptions(
            task="transcribe",
            language=self._language,
            temperature=0.0,
            beam_size=beam,
            sample_len=self.spec.max_new_tokens,
            without_timestamps=True,
            fp16=self._fp16,
        )
        results = whisper.decode(self._model, mel, options)
        return [r.text.strip() for r in results]
