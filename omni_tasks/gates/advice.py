"""What a fixed upstream gate does with nothing changed, from a series' stored nights (pure).

Per-item model (where the nights have per-item rows): a synthetic night draws each item's
outcome from that item's own outcomes over the stored nights, independently, and takes
upstream's figure (a mean) over it. That keeps the stochastic hard set (items that break on
some nights) without assuming a shape. A broken outcome's value is drawn from every broken
item's values pooled, with a generalized Pareto tail fitted to the top 15-20 % of the runaways
(WER past 1): a runaway seen on one item on one night can recur on any item that breaks, and a
larger one than twenty nights showed can happen. The tail starts high, not at WER 1: where the
runaways' bulk lies past 1 (a lognormal with median 2.5), a fit from 1 reads the bulk as tail
(shape ~0.8) and put P(fail) at 36 % for a true 8 %. Too few runaways past the start to fit
(TAIL_MIN) and the advisor refuses (TailTooThin) rather than guess the tail. If the nights
vary more than their items explain (a run-level effect: a χ² test of the nightly figures'
variance against the model's), a normal night-level term with the excess variance is added,
and said so.
Summary-only series use a normal model of the nightly figures.

Uncertainty: every figure's interval comes from refitting the whole model with each night
left out (the jackknife), tail included, so twenty nights give honest widths; the false-fail
chance's is read on the log-odds scale too, where a small chance's error is a factor."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.stats import chi2, genpareto
from scipy.stats import t as student_t

from omni_tasks.gates.design import MeanGate, mean_gate
from omni_tasks.gates.references import Reference
from omni_tasks.gates.table import UpstreamGate

POWER = 0.8  # "what it catches": the shift the gate fails on 80 % of nights
LEVEL = 0.95


@dataclass(frozen=True)
class Night:
    nightly: dt.date
    commit: str | None
    figure: float | None  # upstream's figure that night
    values: dict[str, float | None] | None = None  # each item's part (None: summary-only)


@dataclass(frozen=True)
class GateHistory:
    nights: int
    failing: int
    not_evaluated: int
    current_streak: int  # consecutive failing nights up to the newest
    longest_streak: int
    never_passed: bool  # every night under the current threshold failed
    thresholds: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True)
class GateAdvice:
    gate: str
    figure: str
    comparator: str
    threshold: float
    method: str
    basis: str
    nights: int
    items: int | None  # items a night (per-item model)
    p_fail: float
    p_fail_interval: tuple[float, float]
    detectable_shift: float  # figure shift failing 80 % of nights at the threshold (≤ 0: fails now)
    detectable_items: int | None  # as newly broken items
    target_false_fail: float
    suggested_threshold: float
    suggested_interval: tuple[float, float]
    suggested_detectable_shift: float
    suggested_detectable_items: int | None
    median_figure: float
    notes: list[str]
    history: GateHistory
    tail_mde: float | None = None  # our paired tail test on the same history (Δ broken share)
    tail_mde_items: int | None = None
    # The gate as TensorRT-LLM would set it from this history (α the target, β 1 − POWER, σ
    # one item's spread, reference the median night) and how often our model says it fails.
    design: MeanGate | None = None
    design_p_fail: float | None = None
    # Set when the design is a registered reference (gates/references.py), not this history's:
    # its spec and source.
    reference: str | None = None


class CannotAdvise(ValueError):
    """No advice from these nights; the message says why."""


class TooFewNights(CannotAdvise):
    """Fewer than three nights carry the figure: nothing to advise from."""


def advise(
    nights: Sequence[Night],
    gate: UpstreamGate,
    *,
    target: float = 0.02,
    broken: Callable[[float], bool] | None = None,
    basis: str = "",
    history: Sequence[Night] | None = None,
    draws: int = 4000,
    seed: int = 0,
    reference: Reference | None = None,
) -> GateAdvice:
    """Advice for `gate` from `nights` of an unchanged stack. `broken` says which item values
    are broken (to count a shift in items); `history`: every night of the series, for the
    gate's record (default `nights`); `draws` synthetic nights per fit; `reference`: a
    registered reference for the gate's figure, judged in place of one set from this history."""
    if not 0 < target < 0.5:
        raise ValueError("the target false-fail rate must be between 0 and 0.5")
    if reference is not None and (reference.figure, reference.comparator) != (
        gate.figure,
        gate.comparator,
    ):
        raise ValueError(
            f"the reference {reference.spec} is for {reference.figure}, not the gate's"
        )
    usable = [n for n in nights if n.figure is not None and math.isfinite(n.figure)]
    if len(usable) < 3:
        raise TooFewNights(
            f"gate advice needs at least 3 nights with the figure; {len(usable)} have"
        )
    if all(n.values is not None for n in usable):
        model: _Model = _ItemModel(usable, broken)
    else:
        model = _NormalModel(np.array([n.figure for n in usable], dtype=float))
    up = gate.comparator == "<="
    t = gate.threshold
    q_fail, q_catch = (1 - target, 1 - POWER) if up else (target, POWER)

    n_nights = len(usable)
    full = model.synthetic(np.arange(n_nights), draws, np.random.default_rng(seed))
    p_fail = float(((full > t) if up else (full < t)).mean())
    # Leave-one-night-out refits give each figure's standard error (the jackknife: upward
    # biased by Efron-Stein, so conservative where the bootstrap is known to be too narrow
    # for heavy tails); the same random draws for every refit keep Monte Carlo noise out.
    loo_p, loo_q = [], []
    for left_out in range(n_nights):
        cols = np.delete(np.arange(n_nights), left_out)
        f = model.synthetic(cols, draws, np.random.default_rng(seed))
        loo_p.append(float(((f > t) if up else (f < t)).mean()))
        loo_q.append(float(np.quantile(f, q_fail)))
    tq = float(student_t.ppf(1 - (1 - LEVEL) / 2, n_nights - 1))
    se_q = _jackknife_se(loo_q)
    suggested = float(np.quantile(full, q_fail))
    catch_at = float(np.quantile(full, q_catch))
    # The shift that makes 80 % of nights fail: the 20th (or 80th) percentile moved onto t.
    shift = (t - catch_at) if up else (catch_at - t)
    suggested_shift = (suggested - catch_at) if up else (catch_at - suggested)
    notes = list(model.notes)
    median = float(np.median(full))
    if reference is not None:
        design = reference.gate()
    else:
        sigma, n_items = model.spread()
        design = mean_gate(target, 1 - POWER, sigma, n_items, median, gate.comparator)
    assert design.threshold is not None  # a reference was given
    design_p = float(((full > design.threshold) if up else (full < design.threshold)).mean())
    if (median > t) if up else (median < t):
        notes.append("the gate fails most nights with nothing changed: it protects nothing")
    return GateAdvice(
        gate=gate.describe(),
        figure=gate.figure,
        comparator=gate.comparator,
        threshold=t,
        method=model.method,
        basis=basis,
        nights=len(usable),
        items=model.items,
        p_fail=p_fail,
        p_fail_interval=_p_fail_interval(p_fail, loo_p, tq, draws),
        detectable_shift=shift,
        detectable_items=model.in_items(shift),
        target_false_fail=target,
        suggested_threshold=suggested,
        suggested_interval=(suggested - tq * se_q, suggested + tq * se_q),
        suggested_detectable_shift=suggested_shift,
        suggested_detectable_items=model.in_items(suggested_shift),
        median_figure=median,
        notes=notes,
        history=gate_history(nights if history is None else history, gate),
        design=design,
        design_p_fail=design_p,
        reference=None if reference is None else f"{reference.spec} ({reference.source})",
    )


def _p_fail_interval(p: float, loo: list[float], tq: float, draws: int) -> tuple[float, float]:
    """The false-fail chance's interval: the hull of the jackknife's interval read on the
    difference scale and on the log-odds scale (back-transformed). Each alone missed where the
    other held: the log-odds one when a heavy fitted tail put the estimate high (78 % coverage
    on the lognormal mixture), the difference one when a low estimate came with a small error
    (82 % on the audit's model at 8 %; bench/bench_gate_advice.py). Half a synthetic night
    keeps 0 and 1 finite."""
    eps = 0.5 / draws

    def logit(x: float) -> float:
        x = min(max(x, eps), 1 - eps)
        return math.log(x / (1 - x))

    def expit(x: float) -> float:
        return 1 / (1 + math.exp(-x))

    se, se_logit = _jackknife_se(loo), _jackknife_se([logit(x) for x in loo])
    low = min(p - tq * se, expit(logit(p) - tq * se_logit))
    high = max(p + tq * se, expit(logit(p) + tq * se_logit))
    return max(low, 0.0), min(high, 1.0)


def _jackknife_se(estimates: list[float]) -> float:
    x = np.asarray(estimates)
    return float(math.sqrt((len(x) - 1) / len(x) * float(((x - x.mean()) ** 2).sum())))


def gate_history(nights: Sequence[Night], gate: UpstreamGate) -> GateHistory:
    """How the gate fared on the stored nights, each judged by the threshold of its date."""
    ordered = sorted(nights, key=lambda n: n.nightly)
    verdicts = [gate.verdict(n.figure, gate.threshold_on(n.nightly)) for n in ordered]
    streak = longest = 0
    for v in verdicts:
        if v == "fail":
            streak += 1
            longest = max(longest, streak)
        elif v == "pass":
            streak = 0
    current = gate.history[-1]
    under = [
        v
        for n, v in zip(ordered, verdicts, strict=True)
        if (current.since is None or n.nightly >= current.since) and v != "not_evaluated"
    ]
    return GateHistory(
        nights=len(ordered),
        failing=verdicts.count("fail"),
        not_evaluated=verdicts.count("not_evaluated"),
        current_streak=streak,
        longest_streak=longest,
        never_passed=bool(under) and all(v == "fail" for v in under),
        thresholds=[
            {
                "threshold": h.value,
                "since": h.since.isoformat() if h.since else None,
                "source": h.source,
            }
            for h in gate.history
        ],
    )


class _Model:
    method: str
    items: int | None
    notes: list[str]

    def synthetic(self, cols: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def in_items(self, shift: float) -> int | None:
        return None

    def spread(self) -> tuple[float, int]:
        """σ and n as a mean gate's design reads them."""
        raise NotImplementedError


class _ItemModel(_Model):
    def __init__(self, nights: Sequence[Night], broken: Callable[[float], bool] | None) -> None:
        keys = sorted({k for n in nights for k in (n.values or {})})
        index = {k: i for i, k in enumerate(keys)}
        self.v = np.full((len(keys), len(nights)), np.nan)
        for j, n in enumerate(nights):
            for k, x in (n.values or {}).items():
                if x is not None and math.isfinite(x):
                    self.v[index[k], j] = x
        counts = np.isfinite(self.v).sum(axis=0)
        self.items = round(float(counts.mean()))
        self.method = f"per-item resampling ({len(keys)} items over {len(nights)} nights)"
        self.notes = []
        self.unit = self._unit(broken)
        self.bad = np.zeros(self.v.shape, dtype=bool)
        if broken is not None:
            finite = np.isfinite(self.v)
            self.bad[finite] = [broken(float(x)) for x in self.v[finite]]
            self.method += ", a broken item's value from every broken item's"
            check_tail(self.v[self.bad])
            tail = BrokenValues.fit(self.v[self.bad])
            if tail.tail_share:
                self.method += " (with a fitted tail)"
                self.notes.append(
                    f"runaway tail: a generalized Pareto of shape {tail.shape:.2f} fitted to the "
                    f"{round(tail.tail_share * int(self.bad.sum()))} broken values past "
                    f"{tail.start:.4g} (the runaways' top {TAIL_FRACTION:.0%}-"
                    f"{TAIL_FRACTION_MAX:.0%})"
                )
            elif (self.v[self.bad] > RUNAWAY).any():
                self.notes.append(
                    "runaways drawn as seen: their top values recur (a length cap), no tail fitted"
                )
        observed = np.array([n.figure for n in nights], dtype=float)
        modelled = self._figures(np.arange(len(nights)), 2000, np.random.default_rng(1))
        var_obs, var_mod = float(observed.var(ddof=1)), float(modelled.var())
        self.extra_sd = 0.0
        df = len(nights) - 1
        if var_mod > 0 and chi2.sf(df * var_obs / var_mod, df) < 0.05:
            self.extra_sd = math.sqrt(max(var_obs - var_mod, 0.0))
            self.method += " + a night-level term"
            self.notes.append(
                f"the nights vary more than their items explain (sd {math.sqrt(var_obs):.4g} "
                f"against {math.sqrt(var_mod):.4g}): a run-level effect, modelled as normal"
            )

    def _unit(self, broken: Callable[[float], bool] | None) -> float | None:
        """The figure's move when one item goes from fine to broken."""
        if broken is None or not self.items:
            return None
        finite = self.v[np.isfinite(self.v)]
        bad = np.array([broken(float(x)) for x in finite], dtype=bool)
        if not bad.any():
            return None
        fine_mean = float(finite[~bad].mean()) if (~bad).any() else 0.0
        return abs(float(finite[bad].mean()) - fine_mean) / self.items or None

    def _figures(self, cols: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
        sub = self.v[:, cols]
        pick = rng.integers(0, len(cols), size=(m, sub.shape[0]))
        rows = np.arange(sub.shape[0])
        drawn = sub[rows, pick]
        bad = self.bad[:, cols]
        if bad.any():
            # A runaway seen on one item on one night could happen to any item that breaks:
            # broken draws come from all broken values pooled, past the largest seen by a tail.
            drawn_bad = bad[rows, pick]
            drawn[drawn_bad] = BrokenValues.fit(sub[bad]).sample(rng, int(drawn_bad.sum()))
        with np.errstate(invalid="ignore"):
            total = np.nansum(drawn, axis=1)
            n = np.isfinite(drawn).sum(axis=1)
            return np.where(n > 0, total / np.maximum(n, 1), np.nan)

    def synthetic(self, cols: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
        f = self._figures(cols, m, rng)
        if self.extra_sd:
            f = f + rng.normal(0.0, self.extra_sd, size=m)
        return f[np.isfinite(f)]

    def spread(self) -> tuple[float, int]:
        # One item's spread over every item and night, as TensorRT-LLM's σ is one sample's.
        return float(np.nanstd(self.v, ddof=1)), max(self.items or 1, 1)

    def in_items(self, shift: float) -> int | None:
        if self.unit is None or shift <= 0:
            return None
        return math.ceil(shift / self.unit - 1e-9)


RUNAWAY = 1.0  # a WER past 1: more words inserted than the reference has
# The tail is fitted to the top 15 % of the runaways (up to 20 % to reach TAIL_MIN), not to
# every runaway: a lognormal bulk of runaways with its median past WER 1 fitted from WER 1 gave
# shape 0.76-0.86 (an infinite variance) and P(fail) 36 % for a true 8 %.
TAIL_FRACTION = 0.15
TAIL_FRACTION_MAX = 0.20
TAIL_MIN = 30  # exceedances a fit needs: fewer, and the advisor refuses (TailTooThin)
TAIL_DISTINCT = 10  # fewer distinct exceedances are lengths that recur: drawn as seen


@dataclass(frozen=True)
class BrokenValues:
    """Broken items' values pooled across items and nights: the empirical values up to a high
    threshold `start` among the runaways, and past it a generalized Pareto tail (maximum
    likelihood) fitted to the exceedances, so that twenty nights' largest runaway is not the
    largest a night can have. With no runaways, or runaways tied at a cap (the top ones all
    one value), every value is drawn as seen."""

    body: np.ndarray
    tail_share: float
    start: float = RUNAWAY
    shape: float = 0.0
    scale: float = 0.0

    @classmethod
    def fit(cls, values: np.ndarray) -> BrokenValues:
        start = tail_start(values)
        if start is None:
            return cls(values, 0.0)
        over = values > start
        shape, scale = fit_gpd(values[over] - start)
        return cls(values[~over], float(over.mean()), start, shape, scale)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        # A pool of exceedances only leaves no body: each draw is then the tail's.
        out = rng.choice(self.body, size) if len(self.body) else np.empty(size)
        tail = rng.random(size) < self.tail_share
        out[tail] = self.start + genpareto.rvs(
            self.shape, scale=self.scale, size=int(tail.sum()), random_state=rng
        )
        return out


def fit_gpd(x: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood generalized Pareto (shape, scale) of exceedances `x` > 0, by the
    profile likelihood in θ = shape / scale (Grimshaw 1993): for each θ the shape's estimate is
    mean(log(1 + θx)), so the search is one-dimensional, on a grid then refined; scipy's
    generic `genpareto.fit` took 0.24 s a fit, 23 fits an advice."""
    n, top, mean = len(x), float(x.max()), float(x.mean())

    def profile(theta: np.ndarray) -> np.ndarray:
        shape = np.log1p(np.outer(theta, x)).mean(axis=1)
        return -n * np.log(shape / theta) - n * (1 + shape)

    # θ from just above -1/max (the support's end) to far positive; 0 (the exponential) apart.
    grid = np.concatenate(
        [-(1 - np.geomspace(1e-6, 1 - 1e-6, 200)) / top, np.geomspace(1e-6, 1e3, 300) / mean]
    )
    best = grid[int(np.argmax(profile(grid)))]
    i = int(np.searchsorted(grid, best))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    theta = minimize_scalar(
        lambda t: -float(profile(np.array([t]))[0]), bounds=(lo, hi), method="bounded"
    ).x
    shape = float(np.log1p(theta * x).mean())
    if -n * math.log(mean) - n > float(profile(np.array([theta]))[0]):
        return 0.0, mean  # the exponential (θ → 0) fits better than any θ on the grid
    return shape, shape / float(theta)


def tail_start(values: np.ndarray) -> float | None:
    """Where the fitted tail starts among broken `values`: below the runaways' top 15 % (20 %
    when that reaches TAIL_MIN and 15 % does not), and below every value tied with them.
    None when there is no tail to fit: no runaways, the top ones one value (a length cap), or
    enough of them taking fewer than TAIL_DISTINCT values (lengths that recur: drawn as seen)."""
    runaways = np.sort(values[values > RUNAWAY])
    if len(runaways) == 0:
        return None
    n = len(runaways)
    k = max(round(TAIL_FRACTION * n), min(TAIL_MIN, round(TAIL_FRACTION_MAX * n)), 1)
    first = runaways[-min(k, n)]  # the smallest of the top k
    if first == runaways[-1]:
        return None
    below = runaways[runaways < first]
    start = float(below[-1]) if len(below) else RUNAWAY
    over = runaways[runaways > start]
    if len(over) >= TAIL_MIN and len(np.unique(over)) < TAIL_DISTINCT:
        return None
    return start


class TailTooThin(CannotAdvise):
    """The runaways vary but are too few past the tail's start to fit it: P(fail) and the
    threshold would hang on a guess of the tail."""


def check_tail(values: np.ndarray) -> None:
    """Raises TailTooThin when the runaways among broken `values` vary but fewer than
    TAIL_MIN lie past the tail's start."""
    start = tail_start(values)
    if start is None:
        return
    over = values[values > start]
    if len(over) < TAIL_MIN:
        raise TailTooThin(
            f"the runaway tail is too thin to fit: {len(over)} of "
            f"{int((values > RUNAWAY).sum())} runaways (WER past {RUNAWAY:g}) lie past its "
            f"start {start:.4g}, and a fit needs {TAIL_MIN}; the false-fail chance would be a "
            "guess of the tail (more nights give more runaways)"
        )


class _NormalModel(_Model):
    def __init__(self, figures: np.ndarray) -> None:
        self.f = figures
        self.items = None
        self.method = f"normal model of {len(figures)} nightly figures (no per-item rows)"
        self.notes = ["summary-only: night-to-night variation is taken from the figures alone"]

    def synthetic(self, cols: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
        f = self.f[cols]
        return rng.normal(float(f.mean()), float(f.std(ddof=1)), size=m)

    def spread(self) -> tuple[float, int]:
        # No items: the nightly figure itself is the one sample (n = 1).
        return float(self.f.std(ddof=1)), 1
