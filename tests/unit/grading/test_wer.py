"""The scorer equals seed-tts-eval's normalization + jiwer, re-implemented here verbatim."""

from __future__ import annotations

import string

import jiwer
import pytest
from zhon.hanzi import punctuation as hanzi_punctuation

from omni_tasks.grading.wer import normalize, score


def seed_tts_eval_wer(truth: str, hypo: str) -> float:
    """run_wer.py's process_one for English, as published."""
    punctuation_all = hanzi_punctuation + string.punctuation
    for x in punctuation_all:
        if x == "'":
            continue
        truth = truth.replace(x, "")
        hypo = hypo.replace(x, "")
    truth = truth.replace("  ", " ")
    hypo = hypo.replace("  ", " ")
    truth = truth.lower()
    hypo = hypo.lower()
    return jiwer.process_words(truth, hypo).wer


PAIRS = [
    ("Appearances are deceptive.", "appearances are deceptive"),
    ("Appearances are deceptive.", "Nezha de Siajin's speech in the same language and style"),
    ("Don't take any chances.", "don't take any chances"),
    ("Don't take any chances.", "Dont take any chances."),
    ("Don’t take any chances.", "don't take any chances"),
    ("He said “hello” to me.", 'he said "hello" to me'),
    ("It's 5 o'clock.", "it's five o'clock"),
    ("There were 12 apples.", "there were twelve apples"),
    ("HELLO WORLD", "hello world"),
    ("Hello, world!", "Hello world"),
    ("I feel sick, what should I do?", "I'm sorry to hear that you're feeling unwell. Rest."),
    ("The cat sat on the mat.", "the cat sat on mat"),
    ("The cat sat on the mat.", "the the cat sat on the mat mat"),
    ("The cat sat on the mat.", "a dog stood"),
    ("Well -- maybe; maybe not...", "well maybe maybe not"),
    ("Email me at a@b.com", "email me at ab com"),
    ("Rock 'n' roll", "rock n roll"),
    ("Café au lait, s'il vous plaît.", "cafe au lait sil vous plait"),
    ("Naïve résumé", "naive resume"),
    ("Tabs\tand  spaces", "tabs and spaces"),
    ("Three   spaces here", "three spaces here"),
    ("Semi;colon: and (parens) [brackets] {braces}", "semicolon and parens brackets braces"),
    ("Price: $5.99!", "price 599"),
    ("50% off", "fifty percent off"),
    ("Is it true？", "is it true"),
    ("中文，标点。", "中文 标点"),
    ("Hyphen-ated words", "hyphenated words"),
    ("Ellipsis… here", "ellipsis here"),
    ("A B C D E", "A B C D E F G H I J K"),
    ("One two three four", "one two three"),
    ("Emoji 🙂 stays", "emoji stays"),
    ("Ünïcödé letters", "ünïcödé letters"),
    ("Quote 'single' marks", "quote single marks"),
]


@pytest.mark.parametrize(("reference", "hypothesis"), PAIRS)
def test_wer_equals_seed_tts_eval(reference: str, hypothesis: str) -> None:
    assert score(reference, hypothesis).wer == pytest.approx(
        seed_tts_eval_wer(reference, hypothesis), abs=1e-12
    )


def test_counts_add_up() -> None:
    r = score("the cat sat on the mat", "the the cat sat on mat dog")
    assert r.substitutions + r.deletions + r.hits == r.ref_words == 6
    assert r.wer == pytest.approx((r.substitutions + r.deletions + r.insertions) / 6)
    assert r.hyp_words == 7


def test_empty_hypothesis_is_all_deletions() -> None:
    r = score("Hello there, friend.", "")
    assert (r.wer, r.wer_capped, r.deletions, r.hyp_words) == (1.0, 1.0, 3, 0)
    assert score("Hello there.", " ... ").wer == 1.0


def test_runaway_is_capped_only_in_wer_capped() -> None:
    r = score("Appearances are deceptive.", "one two three four five six seven eight nine ten")
    assert r.wer > 3
    assert r.wer_capped == 1.0


def test_apostrophe_kept_typographic_removed() -> None:
    assert normalize("Don't") == "don't"
    assert normalize("Don’t") == "dont"


def test_an_empty_reference_counts_the_hypothesis_words_as_upstream() -> None:
    assert score("!!!", "something").wer == 1.0
    assert score("?!", "two words").wer == 2.0
    assert score("!!!", "").wer == 0.0


def test_chinese_is_scored_per_character() -> None:
    assert score("今天天气很好。", "今天天气真好", "zh").wer == pytest.approx(1 / 6)
    assert normalize("你好，世界！", "zh") == "你 好 世 界"
    with pytest.raises(ValueError, match="unsupported language 'fr'"):
        score("a", "a", "fr")
