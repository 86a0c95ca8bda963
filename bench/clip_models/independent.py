"""Today's model (bench/simlib.py's SEED_TTS): every item breaks independently on every run,
7.5 % hard items at .8 and the rest at .0216 (8 % broken, ψ ≈ .063). The step lifts a random
set of easy items by .5 on the candidate, sized so its tail is 10.1 % (2.1 points)."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 1088
kind = "wer"
HARD_SHARE, HARD_P, EASY_P = 0.075, 0.8, 0.0216
LIFT, STEP = 0.5, 0.021


def series(rng: np.random.Generator) -> dict[str, Any]:
    hard = int(HARD_SHARE * N)
    p = np.full(N, EASY_P)
    p[:hard] = HARD_P
    bad = p.copy()
    bad[rng.choice(np.arange(hard, N), round(STEP * N / LIFT), replace=False)] += LIFT
    return {"p": p, "bad": bad}


def draw(
    state: dict[str, Any],
    rng: np.random.Generator,
    branch: str,
    night: int,
    step_night: int | None,
    runs: int,
) -> np.ndarray:
    stepped = branch == "candidate" and step_night is not None and night >= step_night
    return rng.random((runs, N)) < (state["bad"] if stepped else state["p"])
