"""The per-clip score exactly as seed-tts-eval computes it (``run_wer.py``; vLLM-Omni's
``process_one_official``, which the conformance suite runs against this).

Normalization: every character of ``string.punctuation`` and ``zhon.hanzi.punctuation`` is
removed except the ASCII apostrophe, double spaces are replaced once by one, English is
lowercased, Chinese is split into single characters; then ``jiwer`` aligns words. A reference
empty after normalization is scored as jiwer 4 scores it (the hypothesis's word count: all
insertions; 0 when the hypothesis is empty too). This is the one scorer every grading path uses.
"""

from __future__ import annotations

import functools
import string
from dataclasses import asdict, dataclass, replace

from omni_tasks.records import ClipGrade

NORMALIZER_VERSION = "seedtts-1"
LANGS = ("en", "zh")


@functools.cache
def _strip_table() -> dict[int, int | None]:
    """The punctuation normalization removes, in seed-tts-eval's order (hanzi first, then
    ASCII; the apostrophe is kept). Built at first use: zhon's tables are slow to import, and
    DAG files parse this module."""
    from zhon.hanzi import punctuation as hanzi

    return str.maketrans("", "", "".join(ch for ch in hanzi + string.punctuation if ch != "'"))


def normalize(text: str, lang: str = "en") -> str:
    """seed-tts-eval text normalization (no number normalization, by design)."""
    if lang not in LANGS:
        raise ValueError(f"unsupported language {lang!r}; choose one of {', '.join(LANGS)}")
    out = text.translate(_strip_table()).replace("  ", " ")
    if lang == "zh":
        return " ".join(out)  # per character, as upstream scores Chinese
    return out.lower()


@dataclass(frozen=True)
class WerResult:
    wer: float
    wer_capped: float
    substitutions: int
    deletions: int
    insertions: int
    hits: int
    ref_words: int
    hyp_words: int
    hypothesis_norm: str

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)

    def onto(self, grade: ClipGrade) -> ClipGrade:
        """`grade` with the word counts and normalized hypothesis a ClipGrade stores."""
        return replace(
            grade,
            hypothesis_norm=self.hypothesis_norm,
            ref_words=self.ref_words,
            hyp_words=self.hyp_words,
            substitutions=self.substitutions,
            deletions=self.deletions,
            insertions=self.insertions,
            hits=self.hits,
        )


def score(reference: str, hypothesis: str, lang: str = "en") -> WerResult:
    """WER of one clip. An empty hypothesis is all deletions (WER 1).

    Words are what jiwer's default transform makes of the text (split on single spaces after
    stripping), so a tab inside a sentence joins two words exactly as in seed-tts-eval.
    """
    ref = normalize(reference, lang)
    hyp = normalize(hypothesis, lang)
    import jiwer  # at first use, as zhon (_strip_table)

    out = jiwer.process_words(ref, hyp)
    ref_words = out.hits + out.substitutions + out.deletions
    errors = out.substitutions + out.deletions + out.insertions
    # An empty reference: jiwer 4's figure (the inserted words), as upstream counts it.
    wer = errors / ref_words if ref_words else float(out.wer)
    return WerResult(
        wer=wer,
        wer_capped=min(wer, 1.0),
        substitutions=out.substitutions,
        deletions=out.deletions,
        insertions=out.insertions,
        hits=out.hits,
        ref_words=ref_words,
        hyp_words=out.hits + out.substitutions + out.insertions,
        hypothesis_norm=" ".join(out.hypotheses[0]),
    )
