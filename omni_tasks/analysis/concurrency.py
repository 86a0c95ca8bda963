"""Concurrency invariance as a paired experiment: the same items, seeds and order sent alone
(c = 1) and co-batched (c = N); each item is its own control. Pure functions of clip records.

- **Output identity**: an item whose output (thinker text, or what its speech was heard to
  say) differs between the levels flipped. A seeded, greedy stage must not flip at all, so
  any flip is evidence; the Clopper–Pearson bound says what "none" rules out.
- **Content**: broken at c = N but not at c = 1 (regressed) against the reverse (improved),
  exact one-sided McNemar, as the paired A/B does.
Verdict BATCH-VARIANT when any item flipped or content regressed at `alpha`; else SAME.
When a c = 1 control rerun flips too, the server is not deterministic run to run, identity
cannot be judged, and only content decides (NONDETERMINISTIC is said beside it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omni_tasks.analysis.accounting import count_of, is_broken
from omni_tasks.analysis.intervals import clopper_pearson_upper, mcnemar_exact
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

    @property
    def deterministic(self) -> bool:
        return not self.control_flips

    @property
    def verdict(self) -> str:
        identity = bool(self.flipped) and self.deterministic
        return "BATCH-VARIANT" if identity or self.p_regressed < ALPHA else "SAME"

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
        return (
            f"{self.verdict} at c = {self.batched} vs c = {self.alone}: {flips}; content "
            f"regressed {self.regressed} : improved {self.improved} (exact McNemar "
            f"p = {self.p_regressed:.2g}){control}"
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
) -> LevelComparison:
    """Pair the items of a c = 1 run and a c = N run (same items, seeds, order)."""
    a = {c.utt_id: c for c in alone if count_of(c) != "infra"}
    b = {c.utt_id: c for c in batched if count_of(c) != "infra"}
    ids = [u for u in a if u in b]
    changed: list[ItemChange] = []
    regressed = improved = 0
    for u in ids:
        ab, bb = is_broken(a[u], tau), is_broken(b[u], tau)
        regressed += bb and not ab
        improved += ab and not bb
        if _output(a[u]) != _output(b[u]):
            changed.append(
                ItemChange(
                    u, a[u].hypothesis, b[u].hypothesis, ab, bb, a[u].audio_uri, b[u].audio_uri
                )
            )
    p_regressed, _ = mcnemar_exact(regressed, improved)
    return LevelComparison(
        alone=levels[0],
        batched=levels[1],
        n=len(ids),
        flipped=tuple(changed),
        regressed=regressed,
        improved=improved,
        p_regressed=p_regressed,
        flip_upper=clopper_pearson_upper(len(changed), len(ids)),
        control_flips=None if control is None else len(flips(alone, control)),
    )
