"""A greedy thinker: an item's outcome is fixed by the prompt and the commit (every seed of a
commit answers it the same way), except a few stochastic "talker" items (6 % of items, broken
at .3 on any run). Each night each branch is a new commit, which re-decides 0.5 % of the
fixed items (at the 6.6 % base rate): per-prompt differences between tonight's two commits
that a fresh seed reproduces. The step breaks 2.1 points of fixed, unbroken items on every
candidate commit from the step on (8 → 10.1 %)."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 1088
kind = "wer"
TALKER_SHARE, TALKER_P, FIXED_P, REDECIDE, STEP = 0.06, 0.3, 0.066, 0.005, 0.021


def series(rng: np.random.Generator) -> dict[str, Any]:
    talkers = int(TALKER_SHARE * N)
    fixed = rng.random(N) < FIXED_P
    fixed[:talkers] = False
    clean = np.flatnonzero(~fixed[talkers:]) + talkers
    stepped = rng.choice(clean, round(STEP * N), replace=False)
    return {
        "fixed": fixed,
        "talkers": talkers,
        "stepped": stepped,
        "seed": int(rng.integers(2**32)),
    }


def draw(
    state: dict[str, Any],
    rng: np.random.Generator,
    branch: str,
    night: int,
    step_night: int | None,
    runs: int,
) -> np.ndarray:
    # Tonight's commit of this branch: the same for every run of it, whatever the seed.
    commit = np.random.default_rng([state["seed"], night + 2**20, branch == "candidate"])
    u = commit.random(N)
    out = np.where(u < REDECIDE, u < REDECIDE * FIXED_P, state["fixed"])
    if branch == "candidate" and step_night is not None and night >= step_night:
        out[state["stepped"]] = True
    talkers = state["talkers"]
    rows = np.tile(out, (runs, 1))
    rows[:, :talkers] = rng.random((runs, talkers)) < TALKER_P
    return rows
