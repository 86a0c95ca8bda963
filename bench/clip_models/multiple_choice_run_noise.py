"""multiple_choice.py with run-level noise: each run's rate on the coin-flip questions (30 %,
at .5) moves by a normal draw of sd 3 points, the same on every such question of that run,
so a night's wrong total varies more than independent questions explain. Step as in
multiple_choice.py: a 5-point drop."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 1197
kind = "mc"
CLASSES = ((0.15, 0.97), (0.30, 0.5), (0.55, 0.01))
LIFT, STEP, RUN_SD = 0.5, 0.05, 0.03


def series(rng: np.random.Generator) -> dict[str, Any]:
    head = [int(share * N) for share, _ in CLASSES[:-1]]
    p = np.repeat([q for _, q in CLASSES], [*head, N - sum(head)])
    bad = p.copy()
    bad[rng.choice(np.arange(sum(head), N), round(STEP * N / LIFT), replace=False)] += LIFT
    return {"p": p, "bad": bad, "flips": slice(head[0], sum(head))}


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
    flips = state["flips"]
    p[:, flips] = np.clip(p[:, flips] + rng.normal(0.0, RUN_SD, (runs, 1)), 0.0, 1.0)
    return rng.random((runs, N)) < p
