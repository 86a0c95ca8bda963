"""(e) Upstream's WER scoring (`process_one_official`, seed_tts_eval.py) and ours agree on a
shared corpus: English and Chinese, punctuation-only references and hypotheses, curly quotes,
hyphens, numbers, empty hypotheses."""

from __future__ import annotations

import pytest

from omni_tasks.grading.wer import score
from tests.conformance.upstream import Upstream

EN = [
    ("Appearances are deceptive.", "Appearances are deceptive."),
    ("Appearances are deceptive.", "appearances are deceptive"),
    ("Don't take any chances.", "Dont take any chances"),
    ("Don't take any chances.", "Don’t take any chances."),
    ("“Quoted” words, here.", "quoted words here"),
    ("‘Single’ quotes.", "single quotes"),
    ("A well-known fact.", "A well known fact."),
    ("A well-known fact.", "A wellknown fact."),
    ("It costs 25 dollars.", "It costs twenty-five dollars."),
    ("Room 101, floor 3.", "room one oh one floor three"),
    ("I feel sick, what should I do?", ""),
    ("I feel sick, what should I do?", "I'm sorry to hear that you're feeling unwell. Rest."),
    ("Hello!", "Hello hello hello hello hello hello hello hello."),
    ("!!!", "something"),
    ("!!!", ""),
    ("?!", "two words"),
    ("...", "..."),
    ("Hello.", "!!!"),
    ("Tabs\tand  double  spaces.", "tabs and double spaces"),
    ("Café crème, naïve résumé.", "cafe creme naive resume"),
    ("Café crème, naïve résumé.", "café crème naïve résumé"),
    ("The 1990s—were great; weren't they?", "the 1990s were great weren't they"),
    ("E-mail me at 9:30 a.m.", "email me at 930 am"),
    ("He always stutters when he's nervous.", "Not cause things flit in prose again."),
    ("Turn left at the second light.", "Turn right at the second light."),
    ("Please read this out loud.", "please read this out loud in english"),
]
ZH = [
    ("今天天气很好。", "今天天气真好"),
    ("今天天气很好。", "今天天气很好"),
    ("你好，世界！", "你好世界"),
    ("你好，世界！", ""),
    ("我们明天见。", "我们后天见吧"),
    ("“引号”里的话。", "引号里的话"),
    ("《书名》很好看。", "书名很好看"),
    ("一二三四五。", "一二三"),
    ("他说：“好的。”", "他说好的"),
    ("2024年是龙年。", "二零二四年是龙年"),
    ("请把窗户关上。", "请把门关上"),
    ("！！！", "有字"),
    ("……", ""),
    ("中文English混合。", "中文english混合"),
    ("价格是25元。", "价格是二十五元"),
    ("请问，现在几点？", "请问现在几点"),
]


def test_e_upstreams_scoring_and_ours_agree(upstream: Upstream) -> None:
    official = upstream.load(
        "vllm_omni.benchmarks.data_modules.seed_tts_eval", ["process_one_official"]
    )["process_one_official"]
    assert len(EN) + len(ZH) >= 40
    for lang, pairs in (("en", EN), ("zh", ZH)):
        for ref, hyp in pairs:
            theirs, _, _ = official(hyp, ref, lang)
            assert score(ref, hyp, lang).wer == pytest.approx(theirs, abs=1e-12), (lang, ref, hyp)
