"""Cross-request voice isolation, as upstream's CosyVoice3 test scores it
(`tests/e2e/online_serving/test_cosyvoice3_voice_isolation.py`, PR #8555, read at vllm-omni
3b249ab6): 32 seeded requests round-robin over 3 reference voices, at concurrency 8 against
concurrency-1 controls; two speaker embedders (CAM++ and wavlm-base-plus-sv) score every
output against every reference, and an output is a leak only when both agree on the same wrong
voice (`wrong_both_agree`). Zero leaks are allowed.

On failure upstream's `retain_failed_voice_isolation` writes `failed_voice_isolation_<test>.json`
(`test`, `requests`, `reference_matrix`, per output `full` and `first_window` scores: `idx`,
`voice`, `sims`, `argmax`, `margin`, `label`, `wrong_voice`…, plus `git_sha`, `mode`, `voices`
— the voice source, `inline` or `registered`, which overwrites the voice list — and
`concurrency`) and each failing output's WAV beside it. Each such file is one run of a series
per model × lane, its variant the mode, voice source and concurrency; each output is an item,
broken when it fails upstream's assertion on the full output (a leak, or unscorable: too short
or silent). The first 2 s label is kept beside it (upstream gates it on the concurrency-1 run).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omni_tasks.benchmarks.artifact import (
    MAX_UTT_ID,
    Document,
    ParsedArtifact,
    artifact_judge,
    check_item_text,
    finite_number,
    imported_spec,
    nightly_of,
    require,
)
from omni_tasks.benchmarks.base import Benchmark, ImportOptions, Words
from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipAudio, ClipGrade, ClipRecord

# The model upstream's test serves (its MODEL): the only model the test exists for.
MODEL = "FunAudioLLM/Fun-CosyVoice3-0.5B-2512"
LABELS = ("correct", "wrong_both_agree", "disagree", "unscorable")
FAILING = ("wrong_both_agree", "unscorable")  # what `_assert_no_leak` fails on, full output
MAX_OUTPUTS = 4096
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")
GRADER = artifact_judge(
    "artifact:vllm-omni-voice-isolation",
    "vLLM-Omni voice isolation test (speaker_similarity.score: CAM++ and WavLM)",
    proxy="speaker embeddings: argmax over the batch's reference voices, never a SIM",
)


class VoiceIsolation(Benchmark):
    id = "voice_isolation"
    family = "voice_isolation"
    metric = "own_voice"
    judged = "incorrect"
    words = Words("output", "outputs", "voice", "", "wrong voices", "no audio")
    breakdowns = ("voice", "label", "first_window")
    description = (
        "Cross-request voice isolation (upstream's CosyVoice3 test): each output's voice "
        "under two speaker embedders, a leak when both agree on a wrong voice"
    )

    def claims(self, doc: JsonObject) -> bool:
        return {"full", "first_window", "reference_matrix", "requests"} <= doc.keys()

    @property
    def figures(self) -> tuple[str, ...]:
        return tuple(f"voice_isolation_{label}" for label in LABELS)

    def broken_label(self, tau: float) -> str:
        return "outputs in another request's voice (or unscorable)"

    def official_summary(self, clips: Sequence[ClipRecord]) -> JsonObject:
        """Upstream's counts per label of the full outputs."""
        counts = Counter((c.breakdown or {}).get("label") for c in clips)
        return {f"voice_isolation_{label}": counts.get(label, 0) for label in LABELS}

    def parse(self, document: Document, options: ImportOptions) -> ParsedArtifact:
        path, doc = document.path, document.doc
        require(self.claims(doc), path, "not a failed_voice_isolation report (full, requests…)")
        full, first, requests = doc["full"], doc["first_window"], doc["requests"]
        for name, rows in (("full", full), ("first_window", first), ("requests", requests)):
            require(
                isinstance(rows, list) and len(rows) <= MAX_OUTPUTS,
                path,
                f"{name!r} must be a list of at most {MAX_OUTPUTS}",
            )
        require(len(first) in (0, len(full)), path, "'first_window' must score every output")
        mode, source = _name(doc, "mode", path), _name(doc, "voices", path)
        concurrency = doc.get("concurrency")
        require(
            finite_number(concurrency) and isinstance(concurrency, int) and concurrency >= 1,
            path,
            "'concurrency' must be a positive count",
        )
        texts = {}  # what each request asked to be said, checked as every item text is
        for i, r in enumerate(requests):
            require(isinstance(r, dict), path, f"requests[{i}] must be an object")
            check_item_text(r, "text", path, f"requests[{i}]")
            texts[r.get("idx")] = r.get("text")
        test = None if doc.get("test") is None else _name(doc, "test", path)
        clips, grades = [], []
        for i, out in enumerate(full):
            where = f"full[{i}]"
            require(isinstance(out, dict), path, f"{where} must be an object")
            idx, voice, label = out.get("idx"), out.get("voice"), out.get("label")
            require(isinstance(idx, int) and 0 <= idx < MAX_OUTPUTS, path, f"{where}: 'idx'")
            plain = isinstance(voice, str) and NAME.fullmatch(voice) is not None
            require(plain, path, f"{where}: 'voice' must be a plain name")
            require(label in LABELS, path, f"{where}: 'label' must be one of {', '.join(LABELS)}")
            check_item_text(out, "wrong_voice", path, where)
            window = first[i] if first else {}
            first_label = window.get("label") if isinstance(window, dict) else None
            require(first_label in (*LABELS, None), path, f"first_window[{i}]: 'label'")
            utt = f"req{idx:04d}"
            require(len(utt) <= MAX_UTT_ID, path, f"{where}: 'idx' too large")
            text = texts.get(idx)
            ref = text if isinstance(text, str) else ""
            clips.append(ClipAudio(utt, i, ref, "ok", audio_uri=_wav(path, test, idx, options)))
            grades.append(
                ClipGrade(
                    utt,
                    "graded",
                    hypothesis=_heard(out),
                    incorrect=label in FAILING,
                    breakdown={
                        "voice": voice,
                        "label": str(label),
                        "first_window": str(first_label or "not scored"),
                    },
                )
            )
        spec = imported_spec(
            path,
            self.id,
            options.branch,
            model=MODEL,
            nightly=nightly_of(doc, path, options.nightly, options.built),
            status="complete",
            n_expected=len(full),
            commit_sha=options.commit or _sha(doc.get("git_sha")),
            variant=f"{mode}.{source}.c{concurrency}",
            config={"mode": mode, "voices": source, "concurrency": concurrency},
            source={
                **document.source("vllm-omni-voice-isolation"),
                "test": test,
                "reference_matrix": _matrix(doc["reference_matrix"], path),
            },
        )
        return ParsedArtifact(spec, clips, grades, GRADER)


def _name(doc: JsonObject, key: str, path: Path) -> str:
    value = doc.get(key)
    require(
        isinstance(value, str) and NAME.fullmatch(value) is not None,
        path,
        f"{key!r} must be a plain name",
    )
    return str(value)


def _matrix(value: Any, path: Path) -> JsonObject:
    """The reference voices' similarity matrix per embedder: small, square, numbers only."""
    require(isinstance(value, dict) and len(value) <= 8, path, "'reference_matrix': an object")
    out: JsonObject = {}
    for name, rows in value.items():
        ok = (
            NAME.fullmatch(name) is not None
            and isinstance(rows, list)
            and len(rows) <= 32
            and all(isinstance(r, list) and len(r) == len(rows) for r in rows)
            and all(finite_number(x, 1.0) for r in rows for x in r)
        )
        require(ok, path, f"'reference_matrix.{name[:40]}': a square matrix of cosines")
        out[name] = [[float(x) for x in r] for r in rows]
    return out


def _sha(value: Any) -> str | None:
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{40}", value) else None


def _heard(out: JsonObject) -> str:
    """Each embedder's pick and margin, as upstream's log table shows them."""
    argmax, margin_of = out.get("argmax"), out.get("margin")
    picks = argmax if isinstance(argmax, dict) else {}
    margins = margin_of if isinstance(margin_of, dict) else {}
    parts = []
    for name in sorted(str(k) for k in picks)[:4]:
        pick, margin = picks[name], margins.get(name)
        if isinstance(name, str) and isinstance(pick, str) and NAME.fullmatch(pick):
            m = f" {margin:+.3f}" if finite_number(margin) else ""
            parts.append(f"{name[:20]}→{pick}{m}")
    return "; ".join(parts) or str(out.get("label"))


def _wav(path: Path, test: str | None, idx: int, options: ImportOptions) -> str | None:
    """The failing output's WAV upstream writes beside the report, when it lies under an
    audio root the import names."""
    from omni_tasks.evidence.audio import AudioUnavailable, check_audio_uri

    if test is None or not options.audio_roots:
        return None
    wav = path.parent / f"failed_voice_isolation_{test}_{idx}.wav"
    if not wav.is_file():
        return None
    try:
        return check_audio_uri(str(wav), options.audio_roots)
    except AudioUnavailable:
        return None


VOICE_ISOLATION = VoiceIsolation()
