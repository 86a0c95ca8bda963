"""The ASR backend a grader spec names, loaded (models from local paths or the offline
packages). Apart from `asr.py`, which every backend imports for the spec."""

from __future__ import annotations

from omni_tasks.grading.asr import GraderSpec, LoadedGrader


def load_grader(spec: GraderSpec) -> LoadedGrader:
    spec = spec.resolved()
    if spec.backend == "faster-whisper":
        from omni_tasks.grading.whisper_ct2 import FasterWhisperBackend as Impl
    elif spec.backend == "transformers":
        from omni_tasks.grading.whisper_hf import TransformersBackend as Impl  # type: ignore[assignment]
    else:
        from omni_tasks.grading.whisper_openai import OpenAIWhisperBackend as Impl  # type: ignore[assignment]
    backend = Impl(spec)
    return LoadedGrader(spec=spec, model_label=backend.model_label, backend=backend)
