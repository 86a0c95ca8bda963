"""The versioned gate policy's shape (what decides a verdict); gates/policy.py loads it from
the shipped YAML or the file OMNI_GATE_POLICY names."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from omni_tasks.contracts import JsonObject

# The history path's and the same-morning re-run's fields (issue 65): they confirm nights.
CONFIRMING_PATHS = {
    "history_nights",
    "history_p",
    "history_regress_p",
    "cusum_k",
    "cusum_h",
    "drift_p",
    "phi_nights",
    "rerun_alpha",
    "rerun_history_p",
    "rerun_seeds",
    "rerun_budget",
    "rerun_power",
}
# What decides a verdict or a confirmation; everything else is reported only.
DECISION_FIELDS = {
    "primary_tau",
    "alpha",
    "min_effect",
    "same_margin",
    "max_same_margin",
    "power",
    "noise_psi",
    "coverage_floor",
    "confirm_p",
    "confirm_window_days",
    "confirm_pool_p",
    "confirm_pool_nights",
    *CONFIRMING_PATHS,
}
ADDED_AFTER_LEGACY = {
    "max_same_margin",
    "confirm_window_days",
    "benchmarks",
    "confirm_pool_p",
    "confirm_pool_nights",
    "resolve_nights",
    "resolve_confidence",
    "resolve_aa_share",
    "resolve_confidence_min",
    "resolve_restart_alpha",
    *CONFIRMING_PATHS,
}


def _hash(fields: JsonObject) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]


class BenchmarkOverrides(BaseModel):
    """What one benchmark decides differently (e.g. a smaller set needs a wider margin); the
    threshold matters only to a benchmark judged by WER (multiple choice is right or wrong)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    primary_tau: float | None = Field(default=None, gt=0)
    min_effect: float | None = Field(default=None, ge=0)
    same_margin: float | None = Field(default=None, gt=0)
    max_same_margin: float | None = Field(default=None, gt=0, le=1)
    coverage_floor: float | None = Field(default=None, ge=0, le=1)


class GatePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    primary_tau: float = Field(gt=0)
    report_taus: list[float] = []
    alpha: float = Field(gt=0, lt=1)
    min_effect: float = Field(ge=0)
    same_margin: float = Field(gt=0)
    power: float = Field(gt=0, lt=1)
    noise_psi: float | None = Field(default=None, ge=0, le=1)
    coverage_floor: float = Field(ge=0, le=1)
    confirm_p: float = Field(gt=0, lt=1)
    max_same_margin: float = Field(default=0.10, gt=0, le=1)
    confirm_window_days: int = Field(default=3, ge=1)
    # The last 2..confirm_pool_nights consecutive nights pooled confirm a REGRESSED night when
    # one pool's exact p (× m) is below confirm_pool_p / (confirm_pool_nights − 1), whatever the
    # suite's size: at `alpha`, 300- and 544-item series confirmed A/A noise at 1.3e-3. With
    # confirm_p (1e-5) the default keeps a night's false confirmation at most 1e-4, as shipped.
    confirm_pool_p: float = Field(default=9e-5, gt=0, lt=1)
    confirm_pool_nights: int = Field(default=3, ge=2)
    # When an open alert resolves (analysis/resolution.py): at least this many quiet nights
    # whose pooled Δ tail bound lies below a floor chosen from the series' ψ/n, so that A/A
    # streaks clear it at least resolve_aa_share of the time; the bound's two-sided confidence
    # is at most resolve_confidence, and where it would be below resolve_confidence_min the
    # series is gated wider than min_effect. Not decision fields: they move no verdict, so the
    # policy version stays.
    resolve_nights: int = Field(default=3, ge=1)
    resolve_confidence: float = Field(default=0.99, gt=0.5, lt=1)
    # The history path (analysis/history.py `confirms`): tonight's candidate against the mean
    # of the baseline's last `history_nights` nights and tonight's, z widened by √φ, φ from
    # `phi_nights` nightly baseline totals; the window is refused when its halves differ at
    # two-sided p < `drift_p`. A REGRESSED night confirms when tonight's z alone has one-sided
    # p < `history_p`, or the restart-free CUSUM of the nights' z (reference `cusum_k`)
    # reaches `cusum_h`, each with Δ̂ ≥ min_effect. Calibrated on simulated A/A nights (the
    # shipped YAML says how); decision fields, since they confirm nights.
    history_nights: int = Field(default=14, ge=3)
    history_p: float = Field(default=1e-5, gt=0, lt=1)
    # A night McNemar leaves short of REGRESSED is REGRESSED by its history z at one-sided
    # p < `history_regress_p` with Δ̂ ≥ min_effect: tonight's baseline draw adds as much noise
    # as the candidate's, so McNemar flags a 2-point step on half its first nights; that alone
    # confirms nothing, it makes the night eligible for the paths that do (the re-run).
    history_regress_p: float = Field(default=1e-3, gt=0, lt=1)
    cusum_k: float = Field(default=2.0, ge=0)
    cusum_h: float = Field(default=2.5, gt=0)
    drift_p: float = Field(default=1e-3, gt=0, lt=1)
    phi_nights: int = Field(default=60, ge=2)
    resolve_confidence_min: float = Field(default=0.95, gt=0.5, lt=1)
    resolve_aa_share: float = Field(default=0.98, gt=0.5, lt=1)
    # An open alert's quiet streak restarts on a REGRESSED night, unconfirmed and not
    # REGRESSED by its history, only when its Holm p widened by φ is below this: φ̂ from 60
    # nights runs low often enough that at `alpha` 5 % of A/A alerts at 2,700 questions with
    # run-level noise did not resolve within three nights. A night short of it joins the
    # streak, whose pooled rule-out still weighs it, so a persisting step does not resolve.
    resolve_restart_alpha: float = Field(default=0.002, gt=0, lt=1)
    # Same-morning confirmation (analysis/rerun.py): a REGRESSED, unconfirmed night's
    # discordant items re-run on both branches at `rerun_seeds` fresh seeds confirm it when
    # the item-level sign test's p (its counts shrunk by φ) is below `rerun_alpha`, unless that
    # would spend more than `rerun_budget` full runs. Decision fields: a re-run confirms a night.
    rerun_alpha: float = Field(default=0.02, gt=0, lt=1)
    # …and only when its usable history evidence agrees at one-sided p < `rerun_history_p`.
    rerun_history_p: float = Field(default=0.01, gt=0, lt=1)
    rerun_seeds: int = Field(default=2, ge=1, le=10)
    rerun_budget: float = Field(default=0.5, ge=0)
    # …nor where it would confirm a min_effect step less than `rerun_power` of the time
    # (analysis/rerun.py `power`: one night's evidence against one night's σ of Δ).
    rerun_power: float = Field(default=0.2, ge=0, lt=1)
    slo_tail: float = Field(gt=0, le=1)
    legacy_mean_max: float = Field(gt=0)
    benchmarks: dict[str, BenchmarkOverrides] = {}

    def for_benchmark(self, benchmark: str) -> GatePolicy:
        """The policy a benchmark is decided under: this one with its overrides. Overridden
        decision fields hash into its own policy version, so its streaks stay its own."""
        over = self.benchmarks.get(benchmark)
        if over is None:
            return self
        return self.model_copy(update={**over.model_dump(exclude_none=True), "benchmarks": {}})

    @property
    def policy_version(self) -> str:
        """`version` plus a hash of the fields that change a decision: a report-only edit
        (SLO, legacy gate, report taus) keeps the version, so streaks and alerts carry on."""
        return f"{self.version}+{_hash(self.model_dump(include=DECISION_FIELDS))}"

    @property
    def legacy_policy_version(self) -> str:
        """The version this policy had before it was hashed by decision fields only (every
        field of the time, the later additions left out); migration 0004 maps it."""
        return f"{self.version}+{_hash(self.model_dump(exclude=ADDED_AFTER_LEGACY))}"

    @property
    def taus(self) -> list[float]:
        return [self.primary_tau, *[t for t in self.report_taus if t != self.primary_tau]]
