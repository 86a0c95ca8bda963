"""What every family's run is asked for (`RunRequest`): the target, the series and branch, the
items (dataset, limit or a chosen subset), the seed, concurrency and deadline, and who
triggered it, and what serves the target (its deploy config and overrides, and a launched
server's provenance: jobs/nightly.py `served`). A family with run options of its own builds
its subclass from it (`Benchmark.request`). Checked before any request is sent: names become
keys and paths, and a bad value must not cost a GPU run first."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omni_tasks.contracts import JsonObject
from omni_tasks.harness import UnknownHarness, client_rules, harness_window
from omni_tasks.records import LineageFlags, RunSpec, Trigger
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL
from omni_tasks.trust.names import InvalidName, check_name, check_run_key


class BenchError(ValueError):
    """A run request that cannot be run (bad names, a simulator profile it cannot serve, a
    stored run under its key with other inputs)."""


@dataclass(frozen=True)
class RunRequest:
    target: str  # a server's base URL, vllm-serve (launched per commit), or simulator:PROFILE
    branch: str
    dataset: str = "demo"  # a root of the family's layout, or its shipped demo set
    commit: str | None = None
    seed: int = 42
    limit: int | None = None  # the first N items
    only: tuple[str, ...] | None = None  # a chosen subset of item keys (bisect's, an A/B's)
    run_key: str | None = None  # None: derived from the run's series, night, branch, seed…
    nightly: dt.date = field(default_factory=lambda: dt.datetime.now(dt.UTC).date())
    trigger: Trigger = "manual"
    variant: str = "default"
    concurrency: int = 10
    timeout_s: float | None = None  # None: the harness version's client deadline (else 900 s)
    benchmark: str | None = None
    model: str = DEFAULT_MODEL  # what the requests ask for: the model the server serves
    lane: str = DEFAULT_LANE  # the hardware lane it runs on (part of its series)
    harness_version: str | None = None  # the reference harness the run must match
    airflow_dag_id: str | None = None
    airflow_run_id: str | None = None
    # simulator:commit-history — main's behaviour before `first_bad` in `history`, rebase's from it
    history: tuple[str, ...] = ()
    first_bad: str | None = None
    # What serves the target: its deploy config (a launched server's effective one) and the
    # deploy overrides; a launched server's stack and GPU, and where its commit came from.
    deploy_config: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    stack: dict[str, Any] = field(default_factory=dict)
    gpu_class: str | None = None
    commit_time: dt.datetime | None = None
    observed_head: str | None = None
    lineage: LineageFlags = field(default_factory=LineageFlags)

    def __post_init__(self) -> None:
        try:
            check_name(self.branch, "branch")
            check_name(self.variant, "variant")
            if self.benchmark is not None:
                check_name(self.benchmark, "benchmark")
            if self.run_key is not None:
                check_run_key(self.run_key)
        except InvalidName as exc:
            raise BenchError(str(exc)) from None
        if self.concurrency < 1:
            raise BenchError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.limit is not None and self.limit < 1:
            raise BenchError(f"limit must be at least 1 (or unset for all), got {self.limit}")
        if self.harness_version is not None:
            try:
                harness_window(self.harness_version)
            except UnknownHarness as exc:
                raise BenchError(str(exc)) from None
        if not self.request_timeout > 0:
            raise BenchError("the request timeout must be a positive number of seconds")

    def spec(self, benchmark: str, n_expected: int, config: JsonObject, **fields: Any) -> RunSpec:
        """The run this request starts (status `running`): its series, night, branch, commit and
        provenance as asked, its config with the target, model and harness; `fields`: what the
        family adds (fingerprints, the seed that reached the model…)."""
        return RunSpec(
            benchmark=benchmark,
            model=self.model,
            lane=self.lane,
            nightly=self.nightly,
            branch=self.branch,
            trigger=self.trigger,
            status="running",
            n_expected=n_expected,
            commit_sha=self.commit,
            commit_time=self.commit_time,
            observed_head=self.observed_head,
            lineage=self.lineage,
            variant=self.variant,
            config={
                "target": self.target,
                "model": self.model,
                "harness_version": self.harness_version,
                **config,
            },
            airflow_dag_id=self.airflow_dag_id,
            airflow_run_id=self.airflow_run_id,
            **fields,
        )

    @property
    def request_timeout(self) -> float:
        """The request deadline: the one asked for, else the harness version's client's (0.28
        waited up to 6 h, 0.30 on 900 s), else 900 s."""
        return self.timeout_s or client_rules(self.harness_version).timeout_s

    @property
    def simulator_profile(self) -> str | None:
        """The simulator profile that answers (None for a real server); commit-history serves
        main's profile before the planted first bad commit and rebase's from it."""
        if not self.target.startswith("simulator:"):
            return None
        profile = self.target.split(":", 1)[1]
        if profile != "commit-history":
            return profile
        if self.commit not in self.history or self.first_bad not in self.history:
            raise BenchError("simulator:commit-history needs the commit and first_bad in history")
        bad = self.history.index(self.commit) >= self.history.index(self.first_bad)
        return "rebase" if bad else "main"
