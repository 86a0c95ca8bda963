"""Today's model with run-level noise: each run's hard-set failure rate moves by a normal
draw of sd 3 points (the same on every hard item of that run), so a night's broken total
varies more than independent items explain (φ ≈ 1.2 at 1,088 items). Step as in
independent.py: easy items lifted by .5, 8 → 10.1 %."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 1088
kind = "wer"
HARD_SHARE, HARD_P, EASY_P, RUN_SD = 0.075, 0.8, 0.0216, 0.03
LIFT, STEP = 0.5, 0.021


def series(rng: np.random.Generator) -> dict[str, Any]:
    hard = int(HARD_SHARE * N)
    p = np.full(N, EASY_P)
    p[:hard] = HARD_P
    bad = p.copy()
    bad[rng.choice(np.arange(hard, N), round(STEP * N / LIFT), replace=False)] += LIFT
    return {"p": p, "bad": bad, "hard": hard}


def draw(
    state: dict[str, Any],
    rng: np.random.Generator,
    branch: str,
    night: int,
    step_night: int | None,
    runs: int,
) -> np.ndarray:
    stepped = branch == "candidate" and step_night is not None and night >= step_night
    p = np.tile(state["bad"] if stepped else state["p"], (runs, 1))
    hard = state["hard"]
    p[:, :hard] = np.clip(p[:, :hard] + rng.normal(0.0, RUN_SD, (runs, 1)), 0.0, 1.0)
    return rng.random((runs, N)) < p
