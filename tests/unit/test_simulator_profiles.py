"""The simulator's failure model: deterministic, shared hard clips, §3-shaped A/B."""

from __future__ import annotations

import random

import pytest

from omni_tasks.grading.flags import DEFAULT_SYSTEM_PROMPT, task_leak
from omni_tasks.grading.wer import score
from omni_tasks.synthesis.profiles import ProfileError, decide, load_profile
from omni_tasks.synthesis.protocol import (
    prompt_template,
    request_body,
    seed_of,
    system_prompt_of,
    target_text,
)


def corpus(n: int = 1088, questions: float = 0.10) -> list[str]:
    rnd = random.Random(7)
    words = "alpha river stone quiet market orange seven garden window yellow bridge".split()
    out = []
    for i in range(n):
        body = " ".join(rnd.choice(words) for _ in range(rnd.randint(6, 16)))
        out.append(f"{body.capitalize()} number {i}" + ("?" if rnd.random() < questions else "."))
    return out


def broken(profile: str, seed: int, texts: list[str]) -> list[bool]:
    p = load_profile(profile)
    return [decide(p, seed, t, DEFAULT_SYSTEM_PROMPT).event != "ok" for t in texts]


def test_deterministic_per_profile_seed_and_text() -> None:
    p = load_profile("rebase")
    texts = corpus(200)
    assert [decide(p, 3, t, None) for t in texts] == [decide(p, 3, t, None) for t in texts]
    assert [decide(p, 3, t, None) for t in texts] != [decide(p, 4, t, None) for t in texts]


def test_main_and_rebase_reproduce_the_reported_ab_shape() -> None:
    texts = corpus()
    totals = {"main": 0, "rebase": 0, "regressed": 0, "improved": 0, "stable": 0}
    seeds = range(5)
    for seed in seeds:
        m, r = broken("main", seed, texts), broken("rebase", seed, texts)
        totals["main"] += sum(m)
        totals["rebase"] += sum(r)
        totals["regressed"] += sum(b and not a for a, b in zip(m, r, strict=True))
        totals["improved"] += sum(a and not b for a, b in zip(m, r, strict=True))
        totals["stable"] += sum(a and b for a, b in zip(m, r, strict=True))
    n = len(texts) * len(seeds)
    assert 0.065 < totals["main"] / n < 0.095  # ≈ 8 %
    assert 0.115 < totals["rebase"] / n < 0.165  # ≈ 14 %
    assert totals["regressed"] / totals["improved"] > 4  # ≈ 8:1
    assert totals["stable"] > 0.8 * totals["main"]  # the shared hard set


def test_questions_are_answered_far_more_often_on_the_rebase() -> None:
    p = load_profile("rebase")
    qs = [t[:-1] + "?" for t in corpus(2000)]
    ss = [t[:-1] + "." for t in corpus(2000)]
    answered = lambda ts: sum(decide(p, 1, t, None).event == "answer" for t in ts)  # noqa: E731
    assert answered(qs) > 5 * answered(ss)


def test_failures_score_as_broken_and_leaks_are_flagged() -> None:
    p = load_profile("rebase")
    seen = set()
    for t in corpus(3000):
        b = decide(p, 0, t, DEFAULT_SYSTEM_PROMPT)
        seen.add(b.event)
        if b.event == "ok":
            assert b.spoken_text == t
        else:
            assert score(t, b.spoken_text).wer > 0.5, b
        if b.event == "task_leak":
            assert task_leak(t, b.spoken_text, DEFAULT_SYSTEM_PROMPT)
        if b.event in ("truncate", "talker_loop", "runaway"):
            assert b.thinker_text == t  # talker-only: the thinker was right
    assert seen >= {"ok", "task_leak", "answer", "babble", "truncate", "talker_loop", "runaway"}


def test_unknown_profile_is_a_clear_error() -> None:
    with pytest.raises(ProfileError, match="unknown simulator profile 'nope'"):
        load_profile("nope")


def test_request_body_is_the_harness_protocol_with_a_seed_for_every_stage() -> None:
    body = request_body("Say this.", prompt_template("seed-tts-default"), seed=7,
                        ref_audio_wav=b"RIFF", ref_text="hello")  # fmt: skip
    assert body["stream"] is True and body["modalities"] == ["text", "audio"]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 2048
    assert body["task_type"] == "Base" and body["language"] == "English"
    assert body["ref_audio"].startswith("data:audio/wav;base64,") and body["ref_text"] == "hello"
    assert [s["seed"] for s in body["sampling_params_list"]] == [7, 7, 7]
    assert target_text(body) == "Say this." and seed_of(body) == 7
    assert system_prompt_of(body) == DEFAULT_SYSTEM_PROMPT
    read_aloud = request_body("Say this.", prompt_template("read-aloud"))
    assert system_prompt_of(read_aloud) is None and "seed" not in read_aloud
    assert target_text(read_aloud).endswith(": Say this.")
