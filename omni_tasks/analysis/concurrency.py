"""Concurrency invariance as a paired experiment: the same items, seeds and order sent alone
(c = 1) and co-batched (c = N); each item is its own control. Pure functions of clip records.

- **Output identity**: an item whose output (thinker text, or what its speech was heard to
  say) differs between the levels flipped. A seeded, greedy stage must not flip at all, so
  any flip is evidence; the Clopper–Pearson bound says what "none" rules out.
- **Content**: broken at c = N but not at c = 1 (regressed) against the reverse (improved),
  exact one-sided McNemar, as the paired A/B does.
- **Voice** (speech out, reference voices mixed in each batch): an output labelled with its own
  reference voice alone and with another's co-batched leaked; zero are allowed, as upstream's
  voice-isolation test allows none.
Verdict BATCH-VARIANT when any item flipped or leaked, or content regressed at `alpha`; else
SAME.
When a c = 1 control rerun flips too, the server is not deterministic run to run, identity
cannot be judged, and only content decides (NONDETERMINISTIC is said beside it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.intervals import clopper_pearson_upper, mcnemar_exact
from omni_tasks.contracts import JsonObject
from omni_tasks.records import ClipRecord

ALPHA = 0.01  # one-sided, content regressed at c = N


@dataclass(frozen=True)
class ItemChange:
    """One item whose output or content differs between the levels: both sides of it."""

    item: str
    alone: str | None  # its output at c = 1
    batched: str | None  # at c = N
    alone_broken: bool
    batched_broken: bool
    alone_audio: str | None = None
    batched_audio: str | None = None


@dataclass(frozen=True)
class VoiceLabel:
    """Which reference voice of its batch an output sounds like (grading/speaker.py, a proxy)."""

    closest: str
    margin: float  # its own voice's similarity minus the best other's
    right: bool


@dataclass(frozen=True)
class VoiceLeak:
    """An output in its own voice when sent alone and in another's when co-batched."""

    item: str
    heard_as: str  # the reference voice it sounds like co-batched
    margin: float  # co-batched (negative: closer to another voice)
    alone_margin: float
    alone_audio: str | None = None
    batched_audio: str | None = None


@dataclass(frozen=True)
class VoiceCheck:
    n: int  # items labelled at both levels
    leaks: tuple[VoiceLeak, ...]
    wrong_alone: int  # in another voice sent alone: the model's cloning, not the batch
    wrong_batched: int
    leak_upper: float  # 95 % Clopper–Pearson upper bound of the leak rate

    @property
    def summary(self) -> str:
        bound = "" if self.leaks else f" (rate < {self.leak_upper:.1%} at 95 %)"
        return (
            f"{len(self.leaks)} of {self.n} outputs in another request's voice{bound} "
            f"(wrong voice alone {self.wrong_alone}, co-batched {self.wrong_batched}; proxy "
            "embedder)"
        )


def voice_check(
    alone: dict[str, VoiceLabel],
    batched: dict[str, VoiceLabel],
    audio: dict[str, tuple[str | None, str | None]] | None = None,
) -> VoiceCheck:
    """Pair each item's voice labels: a leak is right alone and wrong co-batched."""
    ids = [u for u in alone if u in batched]
    audio = audio or {}
    leaks = tuple(
        VoiceLeak(
            u,
            batched[u].closest,
            batched[u].margin,
            alone[u].margin,
            *audio.get(u, (None, None)),
        )
        for u in ids
        if alone[u].right and not batched[u].right
    )
    return VoiceCheck(
        n=len(ids),
        leaks=leaks,
        wrong_alone=sum(not alone[u].right for u in ids),
        wrong_batched=sum(not batched[u].right for u in ids),
        leak_upper=clopper_pearson_upper(len(leaks), len(ids)),
    )


@dataclass(frozen=True)
class LevelComparison:
    alone: int  # the baseline level (1)
    batched: int  # the level compared with it
    n: int  # items counted at both levels (a failed request at either is left out)
    flipped: tuple[ItemChange, ...]
    regressed: int
    improved: int
    p_regressed: float
    flip_upper: float  # 95 % Clopper–Pearson upper bound of the flip rate
    control_flips: int | None = None  # flips between two c = 1 runs (None: no control)
    voice: VoiceCheck | None = None  # speech-out runs with mixed reference voices

    @property
    def verdict(self) -> str:
        identity = bool(self.flipped) and not self.control_flips  # judged on a deterministic server
        leaked = self.voice is not None and bool(self.voice.leaks)
        return "BATCH-VARIANT" if identity or leaked or self.p_regressed < ALPHA else "SAME"

    @property
    def summary(self) -> str:
        flips = f"{len(self.flipped)} of {self.n} outputs changed" + (
            "" if self.flipped else f" (rate < {self.flip_upper:.1%} at 95 %)"
        )
        control = (
            ""
            if self.control_flips is None
            else f"; the c = 1 control rerun changed {self.control_flips}"
            + (" (NONDETERMINISTIC: identity not judged)" if self.control_flips else "")
        )
        voice = "" if self.voice is None else f"; {self.voice.summary}"
        return (
            f"{self.verdict} at c = {self.batched} vs c = {self.alone}: {flips}; content "
            f"regressed {self.regressed} : improved {self.improved} (exact McNemar "
            f"p = {self.p_regressed:.2g}){voice}{control}"
        )


def _output(c: ClipRecord) -> str:
    return " ".join((c.hypothesis or "").split())


def flips(alone: Sequence[ClipRecord], batched: Sequence[ClipRecord]) -> list[str]:
    """The items, counted at both levels, whose output differs."""
    a = {c.utt_id: c for c in alone if count_of(c) != "infra"}
    b = {c.utt_id: c for c in batched if count_of(c) != "infra"}
    return [u for u in a if u in b and _output(a[u]) != _output(b[u])]


def compare_levels(
    alone: Sequence[ClipRecord],
    batched: Sequence[ClipRecord],
    tau: float,
    levels: tuple[int, int],
    control: Sequence[ClipRecord] | None = None,
    voice: VoiceCheck | None = None,
) -> LevelComparison:
    """Pair the items of a c = 1 run and a c = N run (same items, seeds, order)."""
    a = {c.utt_id: c for c in alone if count_of(c) != "infra"}
    b = {c.utt_id: c for c in batched if count_of(c) != "infra"}
    broken = {u: (is_broken(a[u], tau), is_broken(b[u], tau)) for u in a if u in b}
    regressed = sum(bb and not ab for ab, bb in broken.values())
    improved = sum(ab and not bb for ab, bb in broken.values())
    changed = [
        ItemChange(u, a[u].hypothesis, b[u].hypothesis, *broken[u], a[u].audio_uri, b[u].audio_uri)
        for u in flips(alone, batched)
    ]
    p_regressed, _ = mcnemar_exact(regressed, improved)
    return LevelComparison(
        alone=levels[0],
        batched=levels[1],
        n=len(broken),
        flipped=tuple(changed),
        regressed=regressed,
        improved=improved,
        p_regressed=p_regressed,
        flip_upper=clopper_pearson_upper(len(changed), len(broken)),
        control_flips=None if control is None else len(flips(alone, control)),
        voice=voice,
    )


@dataclass(frozen=True)
class ConcurrencyResult:
    """One experiment: its runs per level and each level paired with the alone one."""

    experiment_id: str
    verdict: str
    runs: dict[str, str]  # level (c1, c8, c1-control) → run key
    comparisons: tuple[LevelComparison, ...]

    def to_json(self) -> JsonObject:
        return dataclasses.asdict(self) | {
            "summaries": [c.summary for c in self.comparisons],
            "verdicts": [c.verdict for c in self.comparisons],
        }
