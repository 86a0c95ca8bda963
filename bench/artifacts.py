"""Simulated vLLM-Omni results artifacts shaped like the reported A/B (REFERENCE.md §3).

Used by the benches and the tests where a full synthesis run is not needed, with
`parse_artifact` (a seed-TTS results file read by path, their shortcut); nothing in omni_tasks
runs it (scripts here import it as `artifacts`, tests as `bench.artifacts`).
Everything produced here is labelled simulated (``model_id``) and is deterministic per seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import JsonValue

from omni_tasks.benchmarks.artifact import ParsedArtifact, read_document
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.seed_tts.artifact import parse_document
from omni_tasks.contracts import JsonObject
from omni_tasks.grading.wer import score

SIMULATED_MODEL = "SIMULATED/Qwen3-Omni-30B-A3B-Instruct"

_WORDS = (
    "the river carried old letters past the mill while children counted boats under a grey "
    "sky and the baker closed his shop early because winter had come to the valley again "
    "every morning she walked along the harbour to watch ships leave for distant islands "
    "music drifted from an open window across the quiet square near the station"
).split()
_VOCABULARY = sorted(set(_WORDS))
_QUESTION_OPENERS = ("Could you", "Can you", "Please", "Would you", "Tell me")
_LEAK = (
    "speech in the same language and style as the reference audio matching the timbre "
    "prosody and speaking style of the reference audio while reading the new content clearly"
).split()
_ANSWER = (
    "I'm sorry to hear that here are some general steps you can take first rest and "
    "stay hydrated then consider speaking with a professional who can help you decide "
    "what to do next and remember to take care of yourself"
).split()


@dataclass(frozen=True)
class ABShape:
    """Per-clip paired layout of a baseline/candidate pair at WER > 1.0."""

    n: int = 1088
    stable_broken: int = 80
    regressed: int = 71
    improved: int = 9
    question_share: float = 0.25


def sentences(n: int, rng: random.Random, question_share: float) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.sample(_VOCABULARY, rng.randint(4, 12))
        body = " ".join(words)
        if rng.random() < question_share:
            if rng.random() < 0.5:
                out.append(f"{rng.choice(_QUESTION_OPENERS)} {body}?")
            else:
                out.append(body[0].upper() + body[1:] + "?")
        else:
            out.append(body[0].upper() + body[1:] + ".")
    return out


def _broken_hypothesis(ref: str, rng: random.Random) -> tuple[str, str, str]:
    """(heard, thinker text, mode) with WER > 1 by construction."""
    n = len(ref.split())
    mode = rng.choices(["answer", "leak", "garbled"], weights=[0.45, 0.25, 0.30])[0]
    if mode == "answer":
        heard = " ".join(_ANSWER[: max(2 * n + 2, 20)])
        return heard, heard, mode
    if mode == "leak":
        heard = " ".join(_LEAK[: n + 2]) + " " + ref
        return heard, heard, mode
    heard = " ".join(rng.choice(_WORDS[::-1]) + "s" for _ in range(n + n // 2 + 1))
    return heard, ref, mode  # talker-side failure: the thinker text was right


def _fine_hypothesis(ref: str, rng: random.Random) -> str:
    words = ref.rstrip(".?").split()
    if len(words) >= 5 and rng.random() < 0.15:
        words[rng.randrange(len(words))] = "uh"
    return " ".join(words)


def _artifact(refs: list[str], hyps: list[tuple[str, str]], date: str) -> JsonObject:
    items: list[JsonValue] = []
    wers = []
    for i, (ref, (heard, _)) in enumerate(zip(refs, hyps, strict=True)):
        wer = score(ref, heard).wer
        wers.append(wer)
        items.append(
            {
                "utterance_id": f"sim_{i:05d}",
                "locale": "en",
                "wer": wer,
                "reference_raw": ref,
                "asr_raw": heard,
            }
        )
    wers_sorted = sorted(wers)
    return {
        "model_id": SIMULATED_MODEL,
        "date": date,
        "max_concurrency": 10,
        "seed_tts_content_error_mean": sum(wers) / len(wers),
        "seed_tts_content_error_median": wers_sorted[len(wers) // 2],
        "seed_tts_content_evaluated": len(wers),
        "seed_tts_request_failed": 0,
        "seed_tts_no_pcm": 0,
        "seed_tts_asr_failed": 0,
        "generated_texts": [t for _, t in hyps],
        "seed_tts_wer_eval_items": items,
    }


def ab_artifacts(
    shape: ABShape = ABShape(), *, seed: int = 0, date: str = "20261128-020000"
) -> tuple[JsonObject, JsonObject]:
    """A (baseline, candidate) pair of artifacts with the paired table of ``shape``."""
    rng = random.Random(seed)
    refs = sentences(shape.n, rng, shape.question_share)
    order = list(range(shape.n))
    rng.shuffle(order)
    k1 = shape.stable_broken
    k2 = k1 + shape.regressed
    k3 = k2 + shape.improved
    broken_base = set(order[:k1]) | set(order[k2:k3])
    broken_cand = set(order[:k2])
    base: list[tuple[str, str]] = []
    cand: list[tuple[str, str]] = []
    for i, ref in enumerate(refs):
        for broken, out in ((broken_base, base), (broken_cand, cand)):
            if i in broken:
                heard, thinker, _ = _broken_hypothesis(ref, rng)
                out.append((heard, thinker))
            else:
                heard = _fine_hypothesis(ref, rng)
                out.append((heard, ref))
    return _artifact(refs, base, date), _artifact(refs, cand, date)


@dataclass(frozen=True)
class ClipModel:
    """A clip-level model of one unchanged stack's nights, for A/A histories: a stochastic
    hard set (clips that break on some nights), rare breaks elsewhere, and broken clips that
    sometimes run away (extra words, a heavy-tailed WER). Errors are whole words, so an
    artifact made from a night scores to exactly the WERs the model drew."""

    n: int = 300
    hard: int = 30
    hard_rate: tuple[float, float] = (0.2, 0.6)
    easy_rate: float = 0.01
    runaway_share: float = 0.15  # of broken clips
    runaway_alpha: float = 1.5  # Pareto tail of a runaway's inserted words per reference word
    runaway_scale: float = 1.0
    runaway_cap: int = 60
    seed: int = 0

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Each clip's reference length (words) and chance of breaking on a night."""
        rng = np.random.default_rng(self.seed)
        words = rng.integers(8, 21, self.n)
        rates = np.full(self.n, self.easy_rate)
        hard = rng.choice(self.n, self.hard, replace=False)
        rates[hard] = rng.uniform(*self.hard_rate, self.hard)
        return words, rates

    def errors(self, rng: np.random.Generator, nights: int = 1) -> np.ndarray:
        """Word errors per clip (nights × n): a broken clip loses 60-95 % of its words or,
        at `runaway_share`, gains a Pareto multiple of them; a fine one has 0 or 1."""
        words, rates = self.layout()
        shape = (nights, self.n)
        broken = rng.random(shape) < rates
        runaway = rng.random(shape) < self.runaway_share
        # Never every word: an empty transcript is an ASR failure upstream, not a WER of 1.
        lost = np.minimum(np.ceil(words * rng.uniform(0.6, 1.0, shape)), words - 1)
        tail = self.runaway_scale * rng.pareto(self.runaway_alpha, shape)
        times = np.minimum(np.floor(tail) + 1, self.runaway_cap)
        fine = (rng.random(shape) < 0.1).astype(float)
        return np.where(broken, np.where(runaway, times * words, lost), fine).astype(int)

    def artifact(self, errors: np.ndarray, date: str) -> JsonObject:
        """An upstream seed-TTS results file for one night's `errors` (deletions up to the
        reference's length, insertions beyond it)."""
        words, _ = self.layout()
        rng = random.Random(self.seed)
        refs = [" ".join(rng.choice(_VOCABULARY) for _ in range(int(w))) for w in words]
        hyps = []
        for ref, w, e in zip(refs, words, errors, strict=True):
            ref_words = ref.split()
            if e <= w:
                heard = " ".join(ref_words[int(e) :])
            else:
                heard = " ".join(ref_words + ["again"] * int(e))
            hyps.append((heard, ref))
        return _artifact(refs, hyps, date)


def parse_artifact(path: Path, **options: Any) -> ParsedArtifact:
    """A results file as seed_tts_en's; `options`: its ImportOptions' fields (branch, …)."""
    return parse_document(read_document(path), ImportOptions(**options))
