"""What the simulator does with one request: a pure, deterministic function of
(profile, seed, text, system prompt). See profiles.yaml for the model of failure."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from omni_tasks.contracts import JsonObject
from omni_tasks.grading.flags import is_question

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")
RUNAWAY_REPEATS = 40
EVENTS = ("task_leak", "answer", "babble", "truncate", "talker_loop")
Event = Literal["ok", "task_leak", "answer", "babble", "truncate", "talker_loop", "runaway"]

BABBLE_WORDS = (
    "window garden river morning paper yellow quickly market bottle seven travel orange "
    "letter simple mountain under borrow candle pocket winter listen silver bridge"
).split()
ANSWERS = (
    "Sure, here is the sentence you asked for, read clearly and naturally in English.",
    "That is a good question and the answer depends on where you are and what you need.",
    "I am not able to check that right now, but I can help you think it through.",
    "Of course. Let me read that for you in a clear and natural voice.",
)


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class Planted:
    """A profile's planted standing failures (issue 69's ledger acceptance)."""

    chronic_statement: float  # share of statements in the chronic set
    chronic_question: float  # share of questions in it
    chronic_events: tuple[str, ...]  # the ways a chronic item fails (one each, by hash)
    fixed: float = 0.0  # share of the chronic set this profile no longer fails
    flaky: float = 0.0  # share of the other items that fail at `flaky_rate` a seed
    flaky_rate: float = 0.0
    flaky_event: str = "truncate"


@dataclass(frozen=True)
class Profile:
    name: str
    easy: dict[str, float]
    question: dict[str, float]
    hard: dict[str, float]
    hard_question: dict[str, float]
    stream_error: float = 0.0  # share of requests whose stream ends in an in-stream error chunk
    wrong_answer: float = 0.0  # share of multiple-choice questions answered wrongly
    # A stage-specific regression: clips in a fixed `susceptible` share (the same clips under
    # every seed) get `susceptible_rates` raised, so a rerun reproduces about half of them.
    susceptible: float = 0.0
    susceptible_rates: tuple[tuple[str, float], ...] = ()
    # The engine setting of one stage under which the regression vanishes, and what the
    # simulator then behaves as: {stage: N, engine_args: {...}, behaves_as: PROFILE}.
    vanishes_with: tuple[int, tuple[tuple[str, Any], ...], str] | None = None
    # Batch variance (batching.py): the share of items whose output changes when co-batched,
    # and of speech outputs voiced in another co-batched request's reference voice.
    batch_flip: float = 0.0
    batch_voice_leak: float = 0.0
    # Planted standing failures (profiles.yaml `planted`): items that fail every night in one
    # way, and items that fail at a rate per seed, each chosen by a hash of the text.
    planted: Planted | None = None

    def chronic_event(self, text: str) -> str | None:
        """The planted way this item fails every night, or None (not planted, or fixed)."""
        p = self.planted
        if p is None or not p.chronic_events:
            return None
        share = p.chronic_question if is_question(text) else p.chronic_statement
        if uniform("chronic", text) >= share or uniform("chronic-fixed", text) < p.fixed:
            return None
        return p.chronic_events[int(uniform("chronic-event", text) * len(p.chronic_events))]

    def is_flaky(self, text: str) -> bool:
        """A planted flaky item (never one of the chronic set, fixed or not)."""
        p = self.planted
        if p is None or uniform("flaky", text) >= p.flaky:
            return False
        share = p.chronic_question if is_question(text) else p.chronic_statement
        return uniform("chronic", text) >= share

    def planted_event(self, seed: int, text: str) -> str | None:
        """What a planted item does at this seed: its chronic event every time, a flaky
        item's event at its rate; None for the rest (the profile's rates decide)."""
        if (chronic := self.chronic_event(text)) is not None:
            return chronic
        p = self.planted
        if p is not None and self.is_flaky(text) and uniform(seed, text, "flaky") < p.flaky_rate:
            return p.flaky_event
        return None

    def rates(self, hard: bool, question: bool, text: str = "") -> dict[str, float]:
        base = dict(self.hard if hard else self.easy)
        if question:
            base.update(self.hard_question if hard else self.question)
        if self.susceptible and uniform("susceptible", text) < self.susceptible:
            for event, rate in self.susceptible_rates:
                base[event] = max(base.get(event, 0.0), rate)
        return base

    def under(self, engine_args: tuple[JsonObject, ...]) -> Profile:
        """The profile a server with these per-stage engine settings behaves as."""
        if self.vanishes_with is None:
            return self
        stage, wanted, other = self.vanishes_with
        args = engine_args[stage] if stage < len(engine_args) else {}
        return load_profile(other) if all(args.get(k) == v for k, v in wanted) else self


@dataclass(frozen=True)
class Behaviour:
    """What the simulated model 'thinks' (thinker text) and what its audio says."""

    event: Event
    thinker_text: str
    spoken_text: str


def uniform(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@cache
def _config() -> dict[str, Any]:
    return dict(yaml.safe_load(PROFILES_FILE.read_text(encoding="utf-8")))


def profile_names() -> list[str]:
    return sorted(_config()["profiles"])


def load_profile(name: str) -> Profile:
    profiles = _config()["profiles"]
    if name not in profiles:
        raise ProfileError(f"unknown simulator profile {name!r}; choose one of {profile_names()}")
    p = profiles[name]
    sus = p.get("susceptible") or {}
    vanish = p.get("vanishes_with")
    return Profile(
        name,
        p["easy"],
        p.get("question", {}),
        p["hard"],
        p.get("hard_question", {}),
        float(p.get("stream_error", 0.0)),
        float(p.get("wrong_answer", 0.0)),
        float(sus.get("fraction", 0.0)),
        tuple((str(k), float(v)) for k, v in (sus.get("rates") or {}).items()),
        None
        if vanish is None
        else (
            int(vanish["stage"]),
            tuple(sorted(vanish["engine_args"].items())),
            str(vanish["behaves_as"]),
        ),
        float(p.get("batch_flip", 0.0)),
        float(p.get("batch_voice_leak", 0.0)),
        _planted(p.get("planted")),
    )


def _planted(doc: object) -> Planted | None:
    """A profile's `planted` section (profiles.yaml), checked."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise ProfileError(f"planted: a mapping of chronic and flaky, got {doc!r}")
    chronic, flaky = doc.get("chronic") or {}, doc.get("flaky") or {}
    events = tuple(str(e) for e in chronic.get("events", ()))
    if unknown := [e for e in (*events, flaky.get("event", "truncate")) if e not in EVENTS]:
        raise ProfileError(f"planted events {unknown}: choose among {list(EVENTS)}")
    return Planted(
        float(chronic.get("statement", 0.0)),
        float(chronic.get("question", 0.0)),
        events,
        float(chronic.get("fixed", 0.0)),
        float(flaky.get("fraction", 0.0)),
        float(flaky.get("rate", 0.0)),
        str(flaky.get("event", "truncate")),
    )


def is_hard(text: str) -> bool:
    """The shared hard-clip set: the same clips are hard under every profile and seed."""
    return uniform("hard", text) < float(_config()["hard_fraction"])


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.split()) >= 4]


def decide(profile: Profile, seed: int, text: str, system_prompt: str | None) -> Behaviour:
    if (planted := profile.planted_event(seed, text)) is not None:
        return _behave(planted, seed, text, system_prompt)
    rates = profile.rates(is_hard(text), is_question(text), text)
    for event in EVENTS:
        if uniform(seed, text, event) < rates.get(event, 0.0):
            return _behave(event, seed, text, system_prompt)
    return Behaviour("ok", text, text)


def cut_short(b: Behaviour) -> Behaviour:
    """The same thinker text with its speech stopped after a third of the words (at least one
    word fewer): what a co-batched talker that stops early says."""
    words = b.spoken_text.split()
    keep = min(max(1, len(words) // 3), max(0, len(words) - 1))
    return Behaviour("truncate", b.thinker_text, " ".join(words[:keep]))


def _behave(event: str, seed: int, text: str, system_prompt: str | None) -> Behaviour:
    pick = uniform(seed, text, "pick")
    words = text.split()
    if event == "task_leak":
        leaked = _sentences(system_prompt or "") or ["I act as a text to speech engine."]
        said = " ".join(leaked[int(pick * len(leaked)) :][:2]) + " " + text
        return Behaviour("task_leak", said, said)
    if event == "answer":
        said = ANSWERS[int(pick * len(ANSWERS))] + " " + ANSWERS[int(pick * 7) % len(ANSWERS)]
        return Behaviour("answer", said, said)
    if event == "babble":
        n = max(4, len(words))
        said = " ".join(
            BABBLE_WORDS[int(uniform(seed, text, i) * len(BABBLE_WORDS))] for i in range(n)
        )
        return Behaviour("babble", said, said)
    if event == "truncate":
        keep = max(1, int(len(words) * (0.15 + 0.25 * pick)))
        return Behaviour("truncate", text, " ".join(words[:keep]))
    if pick < 0.25:  # runaway: keeps repeating well past any audio cap
        return Behaviour("runaway", text, " ".join([text] * RUNAWAY_REPEATS))
    return Behaviour("talker_loop", text, " ".join([text] * (3 + int(pick * 3))))
