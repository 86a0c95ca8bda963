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
    system_prompt_of,
    target_text,
)
from omni_tasks.synthesis.simulator import budgeted
from omni_tasks.synthesis.stages import (
    NIGHTLY_STAGE_DEFAULTS,
    DeployConfigError,
    InvalidStageSettings,
    StageDefaults,
    effective,
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


def test_request_body_is_the_harness_protocol_with_complete_seeded_stages() -> None:
    nightly = StageDefaults.nightly()
    body = request_body(
        "Say this.",
        prompt_template("seed-tts-default"),
        seed=7,
        stages=nightly,
        ref_audio_wav=b"RIFF",
        ref_text="hello",
    )
    assert body["stream"] is True and body["modalities"] == ["text", "audio"]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 2048
    assert body["task_type"] == "Base" and body["language"] == "English"
    assert body["ref_audio"].startswith("data:audio/wav;base64,") and body["ref_text"] == "hello"
    stages = body["sampling_params_list"]
    assert [s["seed"] for s in stages] == [7, 7, 7]
    # Complete settings: the request's fields on the thinker, the deploy's on the others.
    assert [s["max_tokens"] for s in stages] == [2048, 1000, 2000]
    assert stages[1]["repetition_penalty"] == 1.05 and stages[2]["temperature"] == 0.0
    assert target_text(body) == "Say this." and system_prompt_of(body) == DEFAULT_SYSTEM_PROMPT
    # Seeded or not, the server applies the same settings but the seed.
    plain = request_body("Say this.", prompt_template("seed-tts-default"))
    assert "sampling_params_list" not in plain and "seed" not in plain
    unseeded = [{k: v for k, v in s.items() if k != "seed"} for s in effective(body, nightly)]
    assert unseeded == [
        {k: v for k, v in s.items() if k != "seed"} for s in effective(plain, nightly)
    ]
    # Stage defaults unknown: no seed is sent at all (never a partial list).
    assert "sampling_params_list" not in request_body("x", prompt_template("read-aloud"), seed=7)
    read_aloud = request_body("Say this.", prompt_template("read-aloud"))
    assert system_prompt_of(read_aloud) is None and target_text(read_aloud).endswith(": Say this.")


def test_a_partial_list_takes_vllm_defaults_and_truncates_every_stage() -> None:
    nightly = StageDefaults.nightly()
    partial = {"sampling_params_list": [{"temperature": 0.0, "seed": 1}, {"seed": 1}, {"seed": 1}]}
    applied = effective(partial, nightly)
    assert [s["max_tokens"] for s in applied] == [16, 16, 16]
    assert [s["repetition_penalty"] for s in applied] == [1.0, 1.0, 1.0]
    assert applied[2]["temperature"] == 1.0
    # A short list keeps the deploy defaults of the stages it leaves out.
    assert effective({"sampling_params_list": [{}]}, nightly)[1]["max_tokens"] == 1000
    with pytest.raises(InvalidStageSettings, match="unknown sampling fields bogus"):
        effective({"sampling_params_list": [{"bogus": 1}]}, nightly)
    # The simulator cuts the speech where 16 codec frames run out (about three words).
    b = decide(load_profile("clean"), 1, "One two three four five six seven eight.", None)
    cut = budgeted(b, applied)
    assert len(cut.spoken_text.split()) <= 3 < len(b.spoken_text.split())
    assert budgeted(b, effective({}, nightly)) == b


def test_deploy_configs_need_their_three_stages() -> None:
    good = {
        "stages": [
            {"stage_id": i, "default_sampling_params": dict(d)}
            for i, d in enumerate(NIGHTLY_STAGE_DEFAULTS)
        ]
    }
    assert StageDefaults.from_deploy(good, "d.yaml").stages == NIGHTLY_STAGE_DEFAULTS
    for doc, message in (
        ({}, "expected a 'stages' list"),
        ({"stages": good["stages"][:2]}, "got 2 stages"),
        ({"stages": [{"stage_id": 0}] * 3}, r"stage 0 \(thinker\) has no"),
        ({"stages": [{"default_sampling_params": {"beam": 2}}] * 3}, "beam"),
    ):
        with pytest.raises(DeployConfigError, match=message):
            StageDefaults.from_deploy(doc, "d.yaml")
