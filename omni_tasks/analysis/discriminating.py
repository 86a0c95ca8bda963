"""The discriminating clips of two runs: where a regression shows, plus a seeded control sample.
The bisection and the ablations run only these (a fraction of a full run), and never judge with
the runs that chose them."""

from __future__ import annotations

import random
from dataclasses import dataclass

Outcomes = dict[str, bool]  # clip -> broken


@dataclass(frozen=True)
class Selection:
    clips: tuple[str, ...]
    regressed: int  # broken on the bad run only
    improved: int  # broken on the good run only
    n_common: int  # clips both runs have: a full run's size


def choose_clips(
    good: Outcomes, bad: Outcomes, key: str, control: int, *, with_improved: bool = True
) -> Selection:
    """Regressed clips (and improved ones, `with_improved`), plus `control` clips drawn with a
    seed from `key` among the rest (with improved clips left out: among those fine on both)."""
    common = sorted(set(good) & set(bad))
    regressed = [u for u in common if bad[u] and not good[u]]
    improved = [u for u in common if good[u] and not bad[u]]
    if with_improved:
        rest = [u for u in common if good[u] == bad[u]]
        chosen = regressed + improved
    else:
        rest = [u for u in common if not good[u] and not bad[u]]
        chosen = regressed
    picked = random.Random(key).sample(rest, min(control, len(rest)))
    return Selection(tuple(sorted(chosen + picked)), len(regressed), len(improved), len(common))
