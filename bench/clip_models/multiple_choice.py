"""A multiple-choice suite (bench/simlib.py's MULTIPLE_CHOICE, N = Daily-Omni's 1,197):
questions always missed (15 %, at .97), coin flips (30 %, at .5) and questions always
answered (55 %, at .01), ≈ 30 % wrong, ψ ≈ .17; each run draws every question independently.
The step: a random set of the always-answered questions fails at .51 on the candidate,
sized for a 5-point drop."""

from __future__ import annotations

from typing import Any

import numpy as np

N = 1197
kind = "mc"
CLASSES = ((0.15, 0.97), (0.30, 0.5), (0.55, 0.01))
LIFT, STEP = 0.5, 0.05


def series(rng: np.random.Generator) -> dict[str, Any]:
    head = [int(share * N) for share, _ in CLASSES[:-1]]
    p = np.repeat([q for _, q in CLASSES], [*head, N - sum(head)])
    bad = p.copy()
    bad[rng.choice(np.arange(sum(head), N), round(STEP * N / LIFT), replace=False)] += LIFT
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
