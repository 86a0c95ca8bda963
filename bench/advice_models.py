"""Clip-level generators for checking the gate advisor, written here and never fitted to the
advisor's output or to a stated truth: WER per clip of one unchanged stack's nights, with a
stochastic hard set and broken clips that sometimes run away (WER past 1). Their truth is
their own huge sample (`truth`), never the advisor's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RunawayMixture:
    """`hard` clips break half the nights, `always` nearly every night, the rest rarely; a
    broken clip runs away (`runaway_share`) or loses most of its words (WER 0.5-1). A
    runaway's WER is lognormal (`tail` "lognormal": median `median`, log-sd `sigma`, the bulk
    of the runaways past WER 1) or 1 plus a half-normal of scale `sigma` (`tail` "light": a
    tail lighter than any Pareto's)."""

    n: int = 1088
    hard: int = 131  # 12 %
    always: int = 33  # 3 %
    runaway_share: float = 0.5
    tail: str = "lognormal"
    median: float = 2.5
    sigma: float = 0.8

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Each clip's weight in the mean (one each: the values are WERs) and its chance of
        breaking on a night."""
        rates = np.full(self.n, 0.005)
        rates[: self.hard] = 0.5
        rates[self.hard : self.hard + self.always] = 0.97
        return np.ones(self.n), rates

    def errors(self, rng: np.random.Generator, nights: int = 1) -> np.ndarray:
        """WER per clip (nights × n)."""
        _, rates = self.layout()
        shape = (nights, self.n)
        broken = rng.random(shape) < rates
        runaway = rng.random(shape) < self.runaway_share
        if self.tail == "lognormal":
            high = rng.lognormal(np.log(self.median), self.sigma, shape)
        else:
            high = 1.0 + np.abs(rng.normal(0.0, self.sigma, shape))
        value = np.where(runaway, high, rng.uniform(0.5, 1.0, shape))
        return np.where(broken, value, rng.exponential(0.02, shape))


def truth(model: RunawayMixture, nights: int = 200_000, seed: int = 7) -> np.ndarray:
    """`nights` nightly mean WERs drawn from `model` (in chunks of 10,000 nights)."""
    rng = np.random.default_rng(seed)
    chunk = min(nights, 10_000)
    return np.concatenate([model.errors(rng, chunk).mean(axis=1) for _ in range(nights // chunk)])
