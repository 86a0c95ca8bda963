"""What an on-demand A/B is asked (ABRequest, checked field by field) and what it found (ABLook,
ABResult): the types the `ab:` section, the markdown and the runner (jobs/ab.py) share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omni_tasks import benchmarks
from omni_tasks.ab import checks
from omni_tasks.ab.sequential import Look
from omni_tasks.contracts import Contract
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.trust.commits import is_full_sha
from omni_tasks.trust.names import check_name

_TARGET = re.compile(r"^(simulator:[A-Za-z0-9_-]{1,40}|https?://[^\s]{1,200}|vllm-serve)$")


class ABError(ValueError):
    """An A/B request that cannot run; the message names the field."""


@dataclass(frozen=True)
class ABRequest:
    benchmark: str
    base_target: str  # simulator:PROFILE or a serving vLLM-Omni's URL
    head_target: str
    base_sha: str
    head_sha: str
    model: str = DEFAULT_MODEL
    lane: str = DEFAULT_LANE
    repo: str | None = None  # OWNER/NAME: the check run goes there
    pr: int | None = None
    budget: int = 6000  # clips, both sides, every look
    dataset: str = "demo"
    limit: int | None = None
    options: Mapping[str, object] = field(default_factory=dict)  # the family's run options
    grader: dict[str, Any] = field(default_factory=dict)
    # A config series' serving fields (environment, server): what a `vllm-serve` target
    # launches at each side's commit, as the nightly does.
    serving: Any = None

    def __post_init__(self) -> None:
        for name in ("base_sha", "head_sha"):
            if not is_full_sha(getattr(self, name)):
                raise ABError(f"{name}: a full 40-character lowercase commit SHA")
        for name in ("base_target", "head_target"):
            target = getattr(self, name)
            if not _TARGET.match(target):
                raise ABError(f"{name}: simulator:PROFILE, an http(s) URL or vllm-serve")
            if target == "vllm-serve" and self.serving is None:
                raise ABError(f"{name}: vllm-serve launches a config series' server only")
        if self.repo is not None:
            try:
                checks.check_repo(self.repo)
            except ValueError as exc:
                raise ABError(f"repo: {exc}") from None
        if self.pr is not None and not 0 < self.pr < 10**9:
            raise ABError("pr: a positive pull request number")
        if not 0 < self.budget <= 10**7:
            raise ABError("budget: a positive number of clips")
        try:
            benchmarks.get(self.benchmark).check_options(self.options)
            Series(self.benchmark, self.model, self.lane)
        except (benchmarks.UnknownBenchmark, ValueError) as exc:
            raise ABError(str(exc)) from None

    @property
    def ab_id(self) -> str:
        return check_name(
            f"pr{self.pr}-{self.head_sha[:10]}"
            if self.pr
            else f"{self.base_sha[:8]}-{self.head_sha[:8]}",
            "A/B id",
        )

    def branch(self, side: str) -> str:
        return f"ab-{self.ab_id}-{side}"

    def command(self) -> str | None:
        """The `omni-tasks ab` that runs this A/B again (no check run posted), or None when a
        side is `vllm-serve`: the command has no config series to launch it from."""
        if "vllm-serve" in (self.base_target, self.head_target):
            return None
        limit = "" if self.limit is None else f" --limit {self.limit}"
        # A family's boolean run option is the flag of its name, hyphenated.
        flags = "".join(f" --{k.replace('_', '-')}" for k, v in self.options.items() if v is True)
        return (
            f"omni-tasks ab --base-target {self.base_target} --head-target {self.head_target} "
            f"--base-sha {self.base_sha} --head-sha {self.head_sha} "
            f"--benchmark {self.benchmark} --model {self.model} --lane {self.lane} "
            f"--dataset {self.dataset}{limit} --budget {self.budget}{flags}"
        )


@dataclass(frozen=True)
class ABLook(Contract):
    """One look of an A/B: the full paired round (0) or a repeat, and what it showed."""

    round: int
    verdict: str
    alpha: float
    n: int  # paired items
    regressed: int
    improved: int
    p_regress: float
    delta_tail: float
    delta_tail_ci: tuple[float, float]
    clips_spent: int  # by the A/B so far
    reasons: list[str]

    @classmethod
    def of(cls, look: Look, spent: int) -> ABLook:
        ev = look.evidence
        return cls(
            round=look.round,
            verdict=look.verdict,
            alpha=look.alpha,
            n=ev.n_paired,
            regressed=ev.regressed,
            improved=ev.improved,
            p_regress=ev.p_regress,
            delta_tail=ev.delta_tail,
            delta_tail_ci=ev.delta_tail_ci,
            clips_spent=spent,
            reasons=list(look.reasons),
        )


@dataclass
class ABResult(Contract):
    ab_id: str
    verdict: str
    looks: list[ABLook]
    clips_spent: int
    budget: int
    stopped: str
    more_clips: int | None
    runs: dict[str, list[str]]
    summary: str = ""
    check_run_id: int | None = None
