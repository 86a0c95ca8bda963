"""The statistics bench with the item model as a plug-in (issue 65): a file that defines `N`,
`kind` ("wer" or "mc"), `series(rng)` (one series' hidden state) and
`draw(state, rng, branch, night, step_night, runs) -> bool[runs, N]` (items broken;
`step_night` None for A/A; a commit at or after a bisection's culprit draws as the candidate).

Nights are drawn through the model and decided by the product's code: analysis.gate
(decide_night, confirmations: today's pooled rule), night.history.lifted (REGRESSED by the
history), analysis.history.confirms (the history path), analysis.rerun (the same-morning
re-run's items, cost and sign test), analysis.resolution.rule_out and analysis.bisect. Only
the per-night history z is computed here in numpy, by history_z's formula
(tests/unit/analysis/test_history.py checks the two agree), so that a million series-nights
fit in minutes. Research code beside the benches.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.stats import beta, binom, norm

from omni_tasks.analysis import history, rerun
from omni_tasks.analysis.bisect import bisect
from omni_tasks.analysis.gate import Evidence, SeriesPoint, confirmations, decide_night
from omni_tasks.analysis.intervals import mcnemar_exact, newcombe_paired
from omni_tasks.analysis.policy import GatePolicy
from omni_tasks.analysis.resolution import rule_out
from omni_tasks.contracts import DecisionHistory
from omni_tasks.night.history import lifted, restarts

START = dt.date(2027, 1, 1)


@dataclass(frozen=True)
class Plugin:
    path: Path
    module: ModuleType
    settings: dict[str, float]  # module constants set from the command line (N included)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def n(self) -> int:
        return int(self.module.N)

    @property
    def kind(self) -> str:
        return str(self.module.kind)

    def series(self, rng: np.random.Generator) -> Any:
        return self.module.series(rng)

    def draw(
        self,
        state: Any,
        rng: np.random.Generator,
        branch: str,
        night: int,
        step_night: int | None,
        runs: int,
    ) -> np.ndarray:
        out = np.asarray(self.module.draw(state, rng, branch, night, step_night, runs))
        if out.shape != (runs, self.n) or out.dtype != bool:
            raise ValueError(
                f"{self.name}: draw returned {out.dtype}{out.shape}, not bool[runs, N]"
            )
        return out


def load(path: Path, settings: dict[str, float] | None = None) -> Plugin:
    """The model in `path` with `settings` replacing its module constants (N, a noise level:
    models read them when they draw); a name the model does not define is an error."""
    spec = importlib.util.spec_from_file_location(f"clip_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("N", "kind", "series", "draw"):
        if not hasattr(module, name):
            raise ValueError(f"{path}: a clip model defines N, kind, series and draw; no {name}")
    if module.kind not in ("wer", "mc"):
        raise ValueError(f"{path}: kind is 'wer' or 'mc', not {module.kind!r}")
    for name, value in (settings or {}).items():
        if not name.isupper() or not hasattr(module, name):
            raise ValueError(f"{path}: no module constant {name} to set")
        module.__dict__[name] = int(value) if name == "N" else value
    return Plugin(path, module, dict(settings or {}))


@dataclass(frozen=True)
class Series:
    """One series' nights 0..T-1 (arrays over nights): tonight's runs, the paired tables
    (both, candidate only, baseline only, neither) and the history evidence."""

    state: Any
    step_night: int | None
    base: np.ndarray  # (T, N) tonight's baseline run
    cand: np.ndarray  # (T, N)
    tables: np.ndarray  # (T, 4)
    z: np.ndarray
    delta: np.ndarray
    refused: np.ndarray  # the baseline window drifted (the chain restarts)
    phi: np.ndarray
    sd: np.ndarray  # Δ̂'s standard error under the null, widened by √φ


def simulate(
    model: Plugin,
    rng: np.random.Generator,
    policy: GatePolicy,
    nights: int,
    step_night: int | None,
) -> Series:
    """A series' baseline history before night 0 (enough for φ and the window) and both
    branches on nights 0..nights-1."""
    state = model.series(rng)
    before = max(policy.history_nights, policy.phi_nights - 1)
    base = np.concatenate(
        [model.draw(state, rng, "baseline", t, step_night, 1) for t in range(-before, nights)]
    )
    cand = np.concatenate(
        [model.draw(state, rng, "candidate", t, step_night, 1) for t in range(nights)]
    )
    z, delta, refused, phi, sd = history_evidence(base, cand, policy)
    tonight = base[before:]
    tables = np.stack(
        [
            (tonight & cand).sum(1),
            (cand & ~tonight).sum(1),
            (tonight & ~cand).sum(1),
            (~tonight & ~cand).sum(1),
        ],
        axis=1,
    )
    return Series(state, step_night, tonight, cand, tables, z, delta, refused, phi, sd)


def history_evidence(
    base: np.ndarray, cand: np.ndarray, policy: GatePolicy
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(z, Δ̂, refused, φ, Δ̂'s standard error) of each candidate night (the last len(cand) rows of `base` are the
    same nights' baseline), as night/history.py computes them: the window is the last
    history_nights baseline nights and tonight's; φ = var(the last phi_nights totals) / V
    (floor 1; V unbiased over the window); refused when the window's halves differ at
    two-sided p < drift_p, their variance widened by φ."""
    t_all, n = base.shape
    nights, k = cand.shape[0], policy.history_nights + 1
    first = t_all - nights  # row of night 0
    cs = np.concatenate([np.zeros((1, n), np.int32), np.cumsum(base, 0, dtype=np.int32)])
    rows = np.arange(first, t_all)
    rates = (cs[rows + 1] - cs[rows + 1 - k]) / k  # (nights, N)
    var = (rates * (1 - rates)).sum(1) * k / (k - 1)
    totals = base.sum(1).astype(float)
    m = min(policy.phi_nights, first + 1)
    spread = sliding_window_view(totals, m)[rows - m + 1].var(1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(var > 0, np.maximum(spread / var, 1.0), 1.0)
    if m < 14:  # night/history.py's PHI_MIN_NIGHTS: the prior 1 stands
        phi = np.ones(nights)
    win = sliding_window_view(totals, k)[rows - k + 1]
    half = k // 2
    diff = win[:, half:].mean(1) - win[:, :half].mean(1)
    sd = np.sqrt(phi * var * (1 / half + 1 / (k - half)))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_drift = np.where(sd > 0, 2 * norm.sf(np.abs(diff) / sd), np.where(diff == 0, 1.0, 0.0))
        delta = (cand.sum(1) - rates.sum(1)) / n
        sd_delta = np.sqrt(phi * var * (1 + 1 / k)) / n
        z = np.where(var > 0, delta / sd_delta, 0.0)
    refused = (p_drift < policy.drift_p) | (var <= 0)
    return z, delta, refused, phi, sd_delta


def paired_point(
    when: dt.date, table: np.ndarray, policy: GatePolicy, found: DecisionHistory | None = None
) -> SeriesPoint:
    """A paired night as the gate decides it (decide_night on its table, then lifted to
    REGRESSED by its history evidence `found` where that says so)."""
    n11, n12, n21, n22 = (int(x) for x in table)
    delta, lo, hi = newcombe_paired(n11, n12, n21, n22)
    p_reg, p_imp = mcnemar_exact(n12, n21)
    ev = Evidence(n11 + n12 + n21 + n22, n12, n21, p_reg, p_imp, delta, (lo, hi))
    v = lifted(decide_night([ev], policy)[0], found, policy)
    phi, nights = (1.0, 0) if found is None else (found.phi, found.phi_nights)
    return SeriesPoint(
        when, v.verdict, v.p_regress_holm, n12, n21, ev.n_paired, phi=phi, phi_nights=nights
    )


def stored(s: Series, t: int, policy: GatePolicy) -> DecisionHistory:
    """Night t's history evidence as its decision stores it."""
    return DecisionHistory(
        z=float(s.z[t]),
        delta=float(s.delta[t]),
        n=s.base.shape[1],
        nights=policy.history_nights + 1,
        refused="drifted" if s.refused[t] else None,
        phi=float(s.phi[t]),
        phi_nights=policy.phi_nights,
        sd=float(s.sd[t]),
    )


def maybe_regressed(s: Series, policy: GatePolicy) -> np.ndarray:
    """Nights that can be REGRESSED (one comparison: Holm is the raw p), by McNemar or by the
    history; only these go through decide_night, since no other night opens an alert."""
    b, c, n = s.tables[:, 1], s.tables[:, 2], s.tables.sum(1)
    p = binom.sf(b - 1, b + c, 0.5)
    by_history = (~s.refused) & (s.z >= norm.isf(policy.history_regress_p))
    return ((p < policy.alpha) | by_history) & (
        np.maximum((b - c) / n, s.delta) >= policy.min_effect - 1e-9
    )


def same_morning_rerun(
    model: Plugin, s: Series, t: int, rng: np.random.Generator, policy: GatePolicy
) -> tuple[bool, float]:
    """(confirmed, full runs spent): night t's discordant items re-run on both branches at
    rerun_seeds fresh seeds, one sign per item (broken more often on the candidate in the new
    runs, or the reverse), analysis/rerun.py's sign test at rerun_alpha, its counts shrunk by
    tonight's φ; skipped when it would spend more than rerun_budget full runs, or would confirm
    a min_effect step less than rerun_power of the time (rerun.underpowered)."""
    items = np.flatnonzero(s.base[t] ^ s.cand[t])
    k, n = policy.rerun_seeds, s.base.shape[1]
    if items.size == 0 or rerun.over_budget("c", "b", items.size, n, k, policy.rerun_budget):
        return False, 0.0
    n12, n21, phi = int(s.tables[t][1]), int(s.tables[t][2]), float(s.phi[t])
    if rerun.underpowered("c", "b", n12, n21, n, phi, policy, stored(s, t, policy)):
        return False, 0.0
    rb = model.draw(s.state, rng, "baseline", t, s.step_night, k)[:, items].sum(0)
    rc = model.draw(s.state, rng, "candidate", t, s.step_night, k)[:, items].sum(0)
    worse, better = int((rc > rb).sum()), int((rc < rb).sum())
    p = rerun.sign_p(worse, better, float(s.phi[t]))
    return p < policy.rerun_alpha, rerun.cost(items.size, n, k)


@dataclass(frozen=True)
class Night:
    """How night t ended: REGRESSED, and confirmed by which path (None: not confirmed)."""

    regressed: bool
    via: str | None
    full_runs: float  # spent by the re-run


def decide(
    model: Plugin,
    s: Series,
    t: int,
    policy: GatePolicy,
    rng: np.random.Generator,
) -> Night:
    """Night t through the product's rules: decide_night, then today's pooled rule
    (confirmations over the night and the pool's nights before it), the history path
    (history.confirms over the chain since the last refused window), the re-run."""
    points: list[SeriesPoint] = [
        paired_point(START + dt.timedelta(days=j), s.tables[j], policy, stored(s, j, policy))
        for j in range(max(0, t - policy.confirm_pool_nights + 1), t + 1)
    ]
    if points[-1].verdict != "REGRESSED":
        return Night(False, None, 0.0)
    if confirmations(points, policy)[-1]:
        return Night(True, "pooled", 0.0)
    if not s.refused[t]:
        after = np.flatnonzero(s.refused[: t + 1])
        chain = [
            history.HistoryStat(s.base.shape[1], float(s.delta[j]), float(s.z[j]), 1)
            for j in range((after[-1] + 1) if after.size else 0, t + 1)
        ]
        if history.confirms(chain, policy) is not None:
            return Night(True, "history", 0.0)
    if rerun.disagrees("c", "b", stored(s, t, policy), policy):
        return Night(True, None, 0.0)
    ok, spend = same_morning_rerun(model, s, t, rng, policy)
    return Night(True, "rerun" if ok else None, spend)


def upper95(k: int, n: int) -> float:
    """Exact (Clopper-Pearson) one-sided 95 % upper bound of a rate seen k times in n."""
    return float(beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


BURN = 8  # nights before counting: the pooled rule and the CUSUM have nights behind them


def _parallel(
    fn: Callable[..., dict[str, Any]],
    model: Plugin,
    policy: GatePolicy,
    series: int,
    nights: int,
    seed: int,
    workers: int,
) -> list[dict[str, Any]]:
    """`fn` over `workers` processes, each a share of the series at a seed of its own."""
    shares = [series // workers + (i < series % workers) for i in range(workers)]
    jobs = [
        (model.path, model.settings, policy, k, nights, seed * 1009 + i)
        for i, k in enumerate(shares)
    ]
    if workers == 1:
        return [fn(*jobs[0])]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(fn, *zip(*jobs, strict=True)))


def aa(
    model: Plugin,
    policy: GatePolicy,
    series: int,
    nights: int,
    seed: int,
    workers: int = 1,
) -> dict[str, Any]:
    """A/A series of `nights` nights each: false confirmations per series-night (each night
    counted, the first BURN left out), by path, and the re-run's GPU per quiet night."""
    parts = _parallel(_aa_part, model, policy, series, nights, seed, workers)
    paths = {k: sum(p["paths"][k] for p in parts) for k in parts[0]["paths"]}
    confirmed = sum(paths.values())
    regressed, spend = sum(p["regressed"] for p in parts), sum(p["spend"] for p in parts)
    total = series * nights
    return {
        "series": series,
        "series_nights": total,
        "false_regressed_per_series_night": regressed / total,
        "false_confirmed_by_path": paths,
        "rate": confirmed / total,
        "upper95": upper95(confirmed, total),
        "extra_full_runs_per_quiet_night": spend / total,
    }


def _aa_part(
    path: Path, settings: dict[str, float], policy: GatePolicy, series: int, nights: int, seed: int
) -> dict[str, Any]:
    model, rng = load(path, settings), np.random.default_rng(seed)
    paths, spend, regressed = dict.fromkeys(("pooled", "history", "rerun"), 0), 0.0, 0
    for _ in range(series):
        s = simulate(model, rng, policy, nights + BURN, None)
        for t in np.flatnonzero(maybe_regressed(s, policy)):
            if t < BURN:
                continue
            night = decide(model, s, int(t), policy, rng)
            regressed += night.regressed
            spend += night.full_runs
            if night.via is not None:
                paths[night.via] += 1
    return {"paths": paths, "spend": spend, "regressed": regressed}


def step(
    model: Plugin,
    policy: GatePolicy,
    series: int,
    horizon: int,
    seed: int,
    workers: int = 1,
) -> dict[str, Any]:
    """Series whose candidate steps on night BURN and stays stepped: the night the alert
    opens (1 = the first bad night; horizon + 1 when it has not) and the re-run's GPU until
    then."""
    parts = _parallel(_step_part, model, policy, series, horizon, seed, workers)
    d = np.concatenate([p["delays"] for p in parts])
    paths = {k: sum(p["paths"][k] for p in parts) for k in parts[0]["paths"]}
    return {
        "series": series,
        "horizon": horizon,
        "alerted_by_night": {str(k): float((d <= k).mean()) for k in (1, 2, 4)},
        "median_nights_to_alert": int(np.quantile(d, 0.5, method="inverted_cdf")),
        "p90_nights_to_alert": int(np.quantile(d, 0.9, method="inverted_cdf")),
        "alerts_by_path": paths,
        "extra_full_runs_per_alert": sum(p["spend"] for p in parts) / max(sum(paths.values()), 1),
    }


def _step_part(
    path: Path, settings: dict[str, float], policy: GatePolicy, series: int, horizon: int, seed: int
) -> dict[str, Any]:
    model, rng = load(path, settings), np.random.default_rng(seed)
    delays, spend = [], 0.0
    paths = dict.fromkeys(("pooled", "history", "rerun"), 0)
    for _ in range(series):
        s = simulate(model, rng, policy, BURN + horizon, BURN)
        delay = horizon + 1
        for t in np.flatnonzero(maybe_regressed(s, policy)):
            if t < BURN:
                continue
            night = decide(model, s, int(t), policy, rng)
            spend += night.full_runs
            if night.via is not None:
                delay = int(t) - BURN + 1
                paths[night.via] += 1
                break
        delays.append(delay)
    return {"delays": np.array(delays, int), "paths": paths, "spend": spend}


def resolutions(
    model: Plugin, policy: GatePolicy, series: int, nights: int, stepped: bool, seed: int
) -> float:
    """The share of series (an alert open from night 0) that resolve within `nights` under
    the lifecycle's rule: A/A, or a step that persists from night 0. As night/alert_plan.py
    reads them: a REGRESSED night (McNemar's, or the history's) restarts the streak only as
    night/history.py `restarts` says (the alert is open, so no night here is confirmed), and analysis/resolution.py's rule_out pools the streak's nights
    against the baseline's history (or, where a night's window was refused, their tables)
    under the newest night's φ, estimated from the baseline's totals before it."""
    rng = np.random.default_rng(seed)
    resolved = 0
    for _ in range(series):
        s = simulate(model, rng, policy, nights, 0 if stepped else None)
        quiet: list[tuple[int, ...]] = []
        histories: list[DecisionHistory] = []
        for t in range(nights):
            found = stored(s, t, policy)
            point = paired_point(START, s.tables[t], policy, found)
            if point.verdict == "REGRESSED" and restarts(
                point.p_regress_holm, found, False, policy
            ):
                quiet, histories = [], []
                continue
            quiet.append(tuple(int(x) for x in s.tables[t]))
            histories.append(found)
            enough = len(quiet) >= policy.resolve_nights
            shown = rule_out(quiet, policy, found.phi, found.phi_nights, histories)
            if enough and shown.ruled_out:
                resolved += 1
                break
    return resolved / series


def bisections(model: Plugin, histories: int, seed: int, commits: int = 16) -> dict[str, Any]:
    """analysis.bisect over `histories` histories whose first bad commit is uniform: each
    (commit, seed) run is the model's draw at a stream of its own, a commit at or after the
    culprit drawing as the stepped candidate; the endpoints' stored runs choose the items."""
    rng = np.random.default_rng(seed)
    wrong, costs = 0, []
    names = [f"u{i:05d}" for i in range(model.n)]
    index = {u: i for i, u in enumerate(names)}
    for h in range(histories):
        state, culprit = model.series(rng), int(rng.integers(1, commits))
        stream = int(rng.integers(2**32))
        history_ = [f"h{h}c{i:02d}" for i in range(commits)]
        evaluate = _evaluate(model, state, history_, culprit, stream, names, index)
        ends = (evaluate(history_[0], 0, None), evaluate(history_[-1], 0, None))
        res = bisect(history_, evaluate, seed=0, stored=ends, used_seeds=frozenset({0}))
        wrong += res.first_bad != history_[culprit]
        costs.append(res.full_runs)
    return {
        "histories": histories,
        "bisect_wrong_first_bad": wrong / histories,
        "bisect_wrong_first_bad_upper95": upper95(wrong, histories),
        "bisect_full_runs": float(np.mean(costs)),
    }


def _evaluate(
    model: Plugin,
    state: Any,
    history_: list[str],
    culprit: int,
    stream: int,
    names: list[str],
    index: dict[str, int],
) -> Callable[[str, int, tuple[str, ...] | None], dict[str, bool]]:
    def evaluate(commit: str, s: int, clips: tuple[str, ...] | None) -> dict[str, bool]:
        i = history_.index(commit)
        branch = "candidate" if i >= culprit else "baseline"
        row = model.draw(state, np.random.default_rng([stream, i, s]), branch, 1, 0, 1)[0]
        ids = names if clips is None else list(clips)
        return {u: bool(row[index[u]]) for u in ids}

    return evaluate


# (A/A series × nights, step series, resolution series, bisection histories). A bisection
# takes 2–3 ms, so 4,000 cost about 10 s. At 400, sampling alone decided the wrong first
# bad's upper 95 % against the 2 % goal: run-level noise sd 3 had 5 of 400 (upper 2.6 %),
# and 0.72 % of 10,000 (upper 0.88 %).
SIZES = {"quick": (40, 40, 40, 20, 3), "default": (3000, 200, 2000, 400, 4000)}


def run(
    model: Plugin,
    policy: GatePolicy,
    quick: bool,
    seed: int = 65,
    workers: int = 2,
    scale: float = 1.0,
    resolution_series: int | None = None,
) -> dict[str, Any]:
    """Every figure the issue asks of a model, under the kind's policy; `scale` multiplies
    the numbers of series and histories (not the nights of a series); `resolution_series`
    sets the resolution figures' own (their first 400 are the default's series)."""
    if model.kind == "mc":
        policy = policy.for_benchmark("daily_omni")
    aa_series, aa_nights, steps, resolve, histories = (
        max(1, round(k * scale)) if i != 1 else k
        for i, k in enumerate(SIZES["quick" if quick else "default"])
    )
    resolve = resolution_series or resolve
    a = aa(model, policy, aa_series, aa_nights, seed, workers)
    d = step(model, policy, steps, 12, seed + 1, workers)
    b = bisections(model, histories, seed + 4)
    return {
        "model": model.name,
        "n": model.n,
        "settings": model.settings,
        "kind": model.kind,
        "aa_false_confirmed_per_series_night": a["rate"],
        "aa_false_confirmed_upper95": a["upper95"],
        "aa_series": a["series"],
        "aa_series_nights": a["series_nights"],
        "aa_false_regressed_per_series_night": a["false_regressed_per_series_night"],
        "aa_false_confirmed_by_path": a["false_confirmed_by_path"],
        "alerted_by_night": d["alerted_by_night"],
        "median_nights_to_alert": d["median_nights_to_alert"],
        "p90_nights_to_alert": d["p90_nights_to_alert"],
        "alerts_by_path": d["alerts_by_path"],
        "step_series": d["series"],
        "step_horizon_nights": d["horizon"],
        "extra_full_runs_per_alert": d["extra_full_runs_per_alert"],
        "extra_full_runs_per_quiet_night": a["extra_full_runs_per_quiet_night"],
        "aa_resolved_within_3": resolutions(model, policy, resolve, 3, False, seed + 2),
        "step_resolved_within_30": resolutions(model, policy, resolve, 30, True, seed + 3),
        "resolution_series": resolve,
        "bisect_wrong_first_bad": b["bisect_wrong_first_bad"],
        "bisect_wrong_first_bad_upper95": b["bisect_wrong_first_bad_upper95"],
        "bisect_full_runs": b["bisect_full_runs"],
        "bisect_histories": b["histories"],
        "policy": {
            k: getattr(policy, k)
            for k in ("history_nights", "history_p", "cusum_k", "cusum_h", "drift_p", "phi_nights")
        },
        "rerun": {
            "seeds": policy.rerun_seeds,
            "power": policy.rerun_power,
            "alpha": policy.rerun_alpha,
            "budget": policy.rerun_budget,
            "history_regress_p": policy.history_regress_p,
        },
    }
