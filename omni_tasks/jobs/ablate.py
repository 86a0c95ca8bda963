"""The ablate job (`omni-tasks ablate`, the omni_ablate DAG): which deploy override brings a
confirmed regression back to the baseline.

The confirmed night's stored candidate and baseline runs choose the clips (its regressed clips
and a control sample of clips fine on both; analysis/discriminating.py). At fresh seeds, one
round at a time, the baseline, the candidate as it is, and the candidate under each ablation not
yet decided run on those clips only, until analysis/ablation.py has decided each or the budget's
rounds are spent. Every run is stored (trigger `ablate`, never read by a gate) with its
overrides, and the result is an event, a reply in the alert's thread and a section of the
night's report, with the budget's arithmetic.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import shlex
from importlib import resources
from typing import Any

import psycopg
import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from omni_tasks.analysis.ablation import (
    Ablated,
    AblationBudget,
    AblationVerdict,
    Reproduced,
    ablate,
)
from omni_tasks.analysis.discriminating import Outcomes, Selection, choose_clips
from omni_tasks.analysis.stage_isolation import ThinkerDiff, compare_thinkers
from omni_tasks.analysis.stage_isolation import verdict as stage_verdict
from omni_tasks.contracts import JsonObject
from omni_tasks.deployment.forms import form_of
from omni_tasks.deployment.schema import GpuBudget
from omni_tasks.formatting import pts_ci
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs.bisect import ControlClips, HuntParams, hunt_event, outcomes, reply_in_thread
from omni_tasks.jobs.nightly import run_on_target, write_report
from omni_tasks.store import alerts as store
from omni_tasks.store.queries import sql
from omni_tasks.synthesis.stages import DeployConfigError, merge_deploy
from omni_tasks.trust.commits import is_full_sha
from omni_tasks.trust.names import check_name


class Ablation(BaseModel):
    """One change to the candidate stack: deploy overrides (merged into its deploy by
    stage_id), or one repository taken back to another version: `vllm` (a vLLM version or
    commit from the environment's vllm_index) or `commit` (a vllm-omni commit). The two
    repository ablations make the two-repository A/B: the one whose change removes the
    regression names the repository that carries it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    overrides: dict[str, Any] = Field(default_factory=dict)
    vllm: str | None = None
    commit: str | None = None
    why: str = ""

    @property
    def repository(self) -> str | None:
        """The repository this ablation takes back, if it is a repository ablation."""
        return "vLLM" if self.vllm else "vllm-omni" if self.commit else None

    @model_validator(mode="after")
    def _checked(self) -> Ablation:
        check_name(self.name, "ablation name")
        if sum(bool(x) for x in (self.overrides, self.vllm, self.commit)) != 1:
            raise ValueError(
                f"ablation {self.name}: one of overrides, vllm or commit (one change at a time)"
            )
        if self.commit is not None and not is_full_sha(self.commit):
            raise ValueError(f"ablation {self.name}: commit is a full 40-character SHA")
        stages = self.overrides.get("stages", [])
        if not isinstance(stages, list) or not all(
            isinstance(s, dict) and isinstance(s.get("stage_id"), int) for s in stages
        ):
            raise ValueError(f"ablation {self.name}: stages entries need an integer stage_id")
        return self


def default_ablations() -> list[Ablation]:
    text = resources.files("omni_tasks.jobs").joinpath("ablations.yaml").read_text()
    return [Ablation.model_validate(a) for a in yaml.safe_load(text)]


class AblateParams(HuntParams):
    """An ablation's parameters (the DAG's trigger form, or the CLI's options)."""

    nightly: dt.date = Field(description="the confirmed night whose clips are ablated")
    candidate_target: str = Field(description="vllm-serve, http(s)://… or simulator:PROFILE")
    baseline_target: str = Field(description="vllm-serve, http(s)://… or simulator:PROFILE")
    ablations: list[Ablation] = Field(default_factory=default_ablations)
    seed: int = Field(default=3000, ge=0, description="the first fresh seed (rounds count up)")
    budget: GpuBudget = Field(
        default=1.0,
        description="GPU the ablations may use, in full-run equivalents (clips run / clips); "
        "the first round always runs",
    )
    control: ControlClips = 25
    stage_isolation: bool = Field(
        default=True, description="also compare both stacks' thinker texts (the talker skipped)"
    )

    @model_validator(mode="after")
    def _checked(self) -> AblateParams:
        if not self.ablations:
            raise ValueError("ablations: at least one")
        names = [a.name for a in self.ablations]
        if len(set(names)) != len(names):
            raise ValueError("ablations: names must differ")
        for a in self.ablations:
            try:
                self.overrides_for(a)
            except DeployConfigError as exc:
                raise ValueError(f"ablation {a.name}: {exc}") from None
            if a.repository and self.candidate_target != "vllm-serve":
                raise ValueError(
                    f"ablation {a.name} changes {a.repository}: the candidate target must be "
                    "vllm-serve (a server per environment)"
                )
        return self

    def overrides_for(self, a: Ablation | None) -> JsonObject:
        """The series' deploy overrides with the ablation's on top (by stage_id)."""
        if a is None:
            return dict(self.overrides)
        return merge_deploy(self.overrides, a.overrides, new_stages=True)

    @property
    def ablate_id(self) -> str:
        blob = json.dumps(
            [
                self.series.key,
                str(self.nightly),
                self.branch,
                self.baseline,
                self.variant,
                self.candidate_target,
                self.baseline_target,
                [a.model_dump() for a in self.ablations],
                self.seed,
                self.control,
                self.budget,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


@dataclasses.dataclass(frozen=True)
class AblateResult:
    selection: Selection
    ablated: Ablated
    run_keys: dict[str, list[str]]  # label -> its run keys, one per seed
    thinker: list[ThinkerDiff]  # stage isolation: baseline vs candidate thinker texts

    @property
    def reference(self) -> Reproduced:
        return self.ablated.reference

    @property
    def verdicts(self) -> list[AblationVerdict]:
        return self.ablated.verdicts

    @property
    def full_runs(self) -> float:
        return self.ablated.full_runs


class AblateError(ValueError):
    pass


def _night_runs(
    conn: psycopg.Connection[Any], p: AblateParams, policy_version: str
) -> dict[str, Any]:
    row = conn.execute(
        sql("night_decision_runs"),
        {
            **p.series.args(),
            "nightly": p.nightly,
            "candidate_branch": p.branch,
            "baseline_branch": p.baseline,
            "variant": p.variant,
            "policy_version": policy_version,
        },
    ).fetchone()
    if row is None:
        raise AblateError(
            f"no paired gate decision of {p.series.name} {p.branch} vs {p.baseline} "
            f"({p.variant}) on {p.nightly}: ablations start from a gated night"
        )
    return dict(row)


def run_ablations(conn: psycopg.Connection[Any], p: AblateParams, today: dt.date) -> AblateResult:
    from omni_tasks import benchmarks
    from omni_tasks.benchmarks.request import RunRequest

    family = benchmarks.get(p.bench)
    policy = load_policy().for_benchmark(p.bench)
    tau = policy.primary_tau
    night = _night_runs(conn, p, policy.policy_version)
    chosen = choose_clips(
        outcomes(conn, night["baseline_key"], tau),
        outcomes(conn, night["candidate_key"], tau),
        f"ablate|{p.ablate_id}",
        p.control,
        with_improved=False,
    )
    if not chosen.regressed:
        raise AblateError(
            f"the night's runs ({night['candidate_key']} against {night['baseline_key']}) have "
            "no regressed clip: nothing to ablate"
        )
    keys_of: dict[str, list[str]] = {}
    thinker: dict[str, dict[str, str | None]] = {}
    by_name = {a.name: a for a in p.ablations}

    def evaluate(label: str, seed: int) -> Outcomes:
        a = by_name.get(label)
        target = p.baseline_target if label == "baseline" else p.candidate_target
        commit = night[f"{label}_commit"] if a is None else a.commit or night["candidate_commit"]
        overrides = p.overrides_for(a)
        generic = RunRequest(
            target=target,
            branch=p.baseline if label == "baseline" else p.branch,
            dataset=p.dataset,
            commit=commit,
            seed=seed,
            only=chosen.clips,
            nightly=p.nightly,
            trigger="ablate",
            variant=p.variant,
            benchmark=p.bench,
            model=p.series.model,
            lane=p.lane,
            overrides=overrides,
            run_key=f"ablate:{p.ablate_id}:{label}:seed{seed}",
        )

        def then(r: RunRequest) -> None:
            # The thinker alone, on the same server, once per stack.
            if p.stage_isolation and a is None and seed == p.seed:
                thinker[label] = family.thinker_texts(r)

        env = p.environment
        if a is not None and a.vllm:  # vLLM taken back, vllm-omni the candidate's
            env = env.model_copy(update={"vllm": a.vllm})
        elif a is not None and a.commit:  # vllm-omni taken back, vLLM the candidate's build
            stack = night["candidate_stack"] or {}
            env = env.model_copy(update={"vllm": stack.get("vllm_build") or stack.get("vllm")})
        serving = p.model_copy(update={"overrides": overrides, "environment": env})
        key = run_on_target(conn, serving, generic, p.grader, then=then)
        keys_of.setdefault(label, []).append(key)
        return outcomes(conn, key, tau)

    ablated = ablate(
        list(by_name),
        evaluate,
        seed=p.seed,
        budget=AblationBudget(p.budget, chosen.n_common, len(chosen.clips), 2 + len(by_name)),
        alpha=policy.alpha,
        min_effect=policy.min_effect,
    )
    diffs = compare_thinkers(thinker["baseline"], thinker["candidate"]) if p.stage_isolation else []
    result = AblateResult(chosen, ablated, keys_of, diffs)
    _record(conn, p, result, night, today)
    write_report(conn, p.series, p.nightly, tau)  # the night's report gets the section
    return result


def summary(p: AblateParams, r: AblateResult) -> str:
    ref = r.reference
    seeds = r.ablated.seeds
    head = (
        f"ablations {p.ablate_id} of {p.series.name} {p.branch} vs {p.baseline} on "
        f"{p.nightly}: {len(r.selection.clips)} clips ({r.selection.regressed} regressed + "
        f"control) at seeds {seeds[0]}–{seeds[-1]}; broken {ref.candidate_broken}/{ref.n_clips} "
        f"on the candidate, {ref.baseline_broken}/{ref.n_clips} on the baseline: "
        f"{reference_text(ref, r.selection)}"
    )
    lines = [head, f"  {r.ablated.arithmetic}"]
    carriers = attribution(p, r)
    if carriers:
        lines.append(f"  {carriers}")
    if p.stage_isolation:
        lines.append(f"  stage isolation: {stage_verdict(r.thinker)}")
    for v in r.verdicts:
        lo, hi = v.share_ci
        lines.append(
            f"  {v.name}: {v.verdict}; broken {v.broken}/{v.n_clips} "
            f"({v.share:.0%}, {lo:.0%}–{hi:.0%}), left against the baseline "
            f"{pts_ci(v.left, v.left_ci)} of a full run, better than the candidate "
            f"p {v.p_better:.2g} (Holm)"
        )
    return "\n".join(lines)


def reference_text(ref: Reproduced, selection: Selection) -> str:
    """What the fresh runs said of the regression; when it did not reproduce, how much of the
    night's excess on these clips they still allow (the power they had)."""
    if ref.reproduced:
        return f"reproduced (p {ref.p_worse:.2g})"
    night = selection.regressed / len(selection.clips)
    return (
        f"not reproduced within the budget (p {ref.p_worse:.2g}): the fresh runs allow the "
        f"candidate up to {ref.bound:+.0%} of these clips over the baseline, the night showed "
        f"{night:+.0%}; a larger budget adds seeds"
    )


def reproduce(p: AblateParams) -> str:
    """One command that runs these ablations again: the form's fields only (the serving
    fields, the server's env among them, stay the deployment config's)."""
    conf = form_of("ablate", p.model_dump(mode="json", exclude_defaults=True))
    conf["ablations"] = [a.model_dump(exclude_defaults=True) for a in p.ablations]
    return f"airflow dags trigger omni_ablate --conf {shlex.quote(json.dumps(conf))}"


def attribution(p: AblateParams, r: AblateResult) -> str | None:
    """Which repository carries the regression, from the repository ablations (None when
    there are none): the one whose taking back removes it."""
    by_name = {a.name: a for a in p.ablations}
    tried = [
        (repo, v.verdict) for v in r.verdicts if (repo := by_name[v.name].repository) is not None
    ]
    if not tried:
        return None
    gone = sorted({repo for repo, verdict in tried if verdict == "regression gone"})
    if len(gone) == 1:
        return f"{gone[0]} carries the regression (taking it back removes it)"
    if gone:
        return "taking back either repository removes the regression: both are needed for it"
    return "neither repository alone carries the regression (no repository ablation removes it)"


def _record(
    conn: psycopg.Connection[Any],
    p: AblateParams,
    r: AblateResult,
    night: dict[str, Any],
    today: dt.date,
) -> None:
    text = summary(p, r)
    by_name = {a.name: a for a in p.ablations}
    details = {
        "ablate_id": p.ablate_id,
        "series": p.series.key,
        "nightly": str(p.nightly),
        "candidate": p.branch,
        "baseline": p.baseline,
        "variant": p.variant,
        "summary": text,
        "chosen_from": [night["candidate_key"], night["baseline_key"]],
        "clips": list(r.selection.clips),
        "seeds": list(r.ablated.seeds),
        "budget": r.ablated.arithmetic,
        "reference": {
            **dataclasses.asdict(r.reference),
            "text": reference_text(r.reference, r.selection),
        },
        "ablations": [
            {
                **dataclasses.asdict(v),
                **by_name[v.name].model_dump(exclude={"name"}),  # why, overrides, vllm, commit
                "run_keys": r.run_keys.get(v.name, []),
            }
            for v in r.verdicts
        ],
        "full_runs": r.full_runs,
        "run_keys": r.run_keys,
        "attribution": attribution(p, r),
        "reproduce": reproduce(p),
        "stage_isolation": (
            {
                "verdict": stage_verdict(r.thinker),
                "differing": [dataclasses.asdict(d) for d in r.thinker if d.position is not None],
                "compared": sum(not d.missing for d in r.thinker),
            }
            if p.stage_isolation
            else None
        ),
    }
    store.insert_event(
        conn,
        **hunt_event(p, today),
        kind="ablation_result",
        text=_headline(r),
        tags=["ablation"],
        details=details,
        dedup_key=f"ablation_result|{p.ablate_id}",
    )
    reply_in_thread(conn, p, f"ablate|{p.ablate_id}", text)
    conn.commit()


def _headline(r: AblateResult) -> str:
    gone = [v.name for v in r.verdicts if v.verdict == "regression gone"]
    if not r.reference.reproduced:
        return "ablations: the regression did not reproduce on fresh runs within the budget"
    if gone:
        return f"ablations: regression gone under {', '.join(gone)}"
    unclear = [v.name for v in r.verdicts if v.verdict == "unclear"]
    if unclear:
        return (
            f"ablations: {', '.join(unclear)} undecided within the budget; none shown to remove it"
        )
    return "ablations: no override removes the regression"
