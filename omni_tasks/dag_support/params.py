"""The DAGs' trigger forms (Airflow Params, in sections): the nightly's, and the one-series
forms of bisect, ablate, regrade and A/B, whose fields are allow-lists (trust/forms.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk import Param


def nightly_params() -> dict[str, Param]:
    """The trigger form of seed_tts_nightly, in sections. Every field is empty by default: the
    deployment config (omni_tasks.deployment) supplies the run; a non-empty field overrides it
    once. Choices are offered as proposals (`examples`), never as a select showing `null`; the
    first task checks every value against the config before any other work."""
    from airflow.sdk import Param

    from omni_tasks import benchmarks
    from omni_tasks.trust import forms

    def field(
        kind: str | list[str], section: str, title: str, description: str, **kw: Any
    ) -> Param:
        return Param(
            None,
            type=["null", *([kind] if isinstance(kind, str) else kind)],
            title=title,
            section=section,
            description=description,
            **kw,
        )

    what, where, how = "What to benchmark", "Where it runs", "How it is graded"
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    return {
        "benchmark": field(
            "string", what, "Benchmark", "See `omni-tasks benchmarks list`", examples=runnable
        ),
        "branches": field(
            "array", what, "Branches", 'e.g. ["main", "vllm-rebase"]', items={"type": "string"}
        ),
        "baseline": field("string", what, "Baseline branch", "The gate compares against it"),
        "dataset": field(
            "string",
            what,
            "Dataset",
            "demo, a seed-tts-eval locale dir or a Daily-Omni root (under a trusted root)",
        ),
        "limit": field("integer", what, "Only the first N items", "Unset: all", minimum=1),
        "seeds": field(
            "array",
            what,
            "Seeds",
            "Several form a run group, e.g. [1, 2, 3]",
            items={"type": "integer"},
        ),
        "variant": field("string", what, "Variant name", "Names a deploy-override variant"),
        "transcript_mode": field(
            "boolean", what, "Transcript mode", "Simulator targets only: no audio (fast)"
        ),
        "targets": field(
            "object",
            where,
            "Target per branch",
            "branch → simulator:PROFILE, or a target the deployment config names (its "
            'series\' targets and form_choices.targets), e.g. {"main": "simulator:main"}',
            additionalProperties=forms.TARGET_SCHEMA,
            examples=[{"main": "simulator:main", "rebase": "simulator:rebase"}],
        ),
        "commits": field(
            "object",
            where,
            "Commit per branch",
            'branch → commit SHA (7–40 hex), e.g. {"rebase": "3f2a9c1"}; default: the head',
            additionalProperties={"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"},
        ),
        "environment": field(
            "object",
            where,
            "vLLM build",
            '{"vllm": BUILD}, one of the config\'s form_choices (environment.vllm); the rest '
            "of the environment is the config's",
            **forms.ENVIRONMENT_SCHEMA,
        ),
        "server": field(
            "object",
            where,
            "Model",
            '{"model": NAME}, one of the config\'s form_choices (server.model); the rest of the '
            "server is the config's",
            **forms.SERVER_SCHEMA,
        ),
        "overrides": field(
            ["object", "string"],
            where,
            "Deploy overrides",
            "The name of one of the config's named_overrides, or "
            '{"stages": [{"stage_id": 0, "enforce_eager": true}]} (eager mode, batching and '
            "sampling keys only)",
            **forms.OVERRIDE_SCHEMA,
        ),
        "grader": field(
            "object",
            how,
            "Grader",
            'e.g. {"backend": "faster-whisper", "harness_version": "0.30.0"} (the model is the '
            "config's)",
            **forms.GRADER_SCHEMA,
        ),
        "prompt_template": field(
            "string",
            how,
            "Prompt template",
            "seed-tts-default (the harness's) or read-aloud",
            examples=["seed-tts-default", "read-aloud"],
        ),
    }


def _serving_params() -> dict[str, Param]:
    """The serving choices a one-series form (bisect, ablate) may make; the rest is the
    configured series' (docs/operators/security.md)."""
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    return {
        "grader": Param({}, type="object", description="Grader choices", **forms.GRADER_SCHEMA),
        "environment": Param(
            {},
            type="object",
            description="{vllm: BUILD} among the config's form_choices",
            **forms.ENVIRONMENT_SCHEMA,
        ),
        "server": Param(
            {},
            type="object",
            description="{model: NAME} among the config's form_choices",
            **forms.SERVER_SCHEMA,
        ),
        "overrides": Param(
            {},
            type=["object", "string"],
            description="A named override of the config, or eager/batching/sampling keys",
            **forms.OVERRIDE_SCHEMA,
        ),
    }


def one_of(values: Any) -> str:
    """A JSON-schema pattern that takes exactly these strings."""
    return "^(" + "|".join(re.escape(str(v)) for v in values) + ")$"


def one_series_fields(capability: str, what: str, where: str) -> dict[str, Param]:
    """The fields a bisect's and an ablation's forms share: which series (only benchmarks
    whose family has `capability`: any other is refused at submit), its branches, and where
    it runs (empty target and dataset: the configured series', deployment.one_series_form)."""
    from airflow.sdk import Param

    from omni_tasks import benchmarks

    able = [b.id for b in benchmarks.all_benchmarks() if capability in b.capabilities]
    return {
        "benchmark": Param(
            None,
            type=["null", "string"],
            title="Benchmark",
            section=what,
            examples=able,
            pattern=one_of(able),
            description=f"A benchmark whose family has the {capability} capability "
            "(`omni-tasks benchmarks list`)",
        ),
        "lane": Param(
            "default", type="string", title="Lane", section=what, description="Hardware lane"
        ),
        "branch": Param("rebase", type="string", title="Candidate branch", section=what),
        "baseline": Param("main", type="string", title="Baseline branch", section=what),
        "variant": Param("default", type="string", title="Variant", section=what),
        "dataset": Param(
            None,
            type=["null", "string"],
            title="Dataset",
            section=where,
            description="Empty: the series' configured dataset",
        ),
        "transcript_mode": Param(
            False, type="boolean", title="Transcript mode", section=where, description="Simulator"
        ),
    }


def _target(title: str, section: str) -> Param:
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    return Param(
        None,
        title=title,
        section=section,
        description="Empty: the config's target for that branch. Else vllm-serve, a target the "
        "config names, or simulator:PROFILE",
        **{**forms.TARGET_SCHEMA, "type": ["null", "string"]},
    )


def _alert(section: str) -> Param:
    from airflow.sdk import Param

    return Param(
        None,
        type=["null", "integer"],
        title="Alert",
        section=section,
        description="The alert whose Slack thread gets the result",
    )


def bisect_params() -> dict[str, Param]:
    """The bisect form, in sections. Its target and dataset default to the deployment
    config's for the series and branch; the simulator is only what the demo names."""
    from airflow.sdk import Param

    from omni_tasks.trust import forms

    what, where, how = "What to bisect", "Where it runs", "How hard to look"
    return {
        "history": Param(
            [],
            type="array",
            maxItems=forms.MAX_LIST,
            items={"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"},
            title="Commits",
            section=what,
            description="Oldest (good) to newest (bad); the alert's range when it came from one",
        ),
        **one_series_fields("bisect", what, where),
        "axis": Param(
            "vllm-omni",
            type="string",
            enum=["vllm-omni", "vllm"],
            title="Repository bisected",
            section=what,
            description="vllm-omni commits, or vLLM commits with vllm-omni at omni_commit",
        ),
        "omni_commit": Param(
            None,
            type=["null", "string"],
            title="vllm-omni commit held",
            section=what,
            description="axis vllm only",
        ),
        "target": _target("Target", where),
        "first_bad": Param(
            None,
            type=["null", "string"],
            title="Planted first bad commit",
            section=where,
            description="simulator:commit-history only",
        ),
        "limit": Param(None, type=["null", "integer"], title="Only the first N items", section=how),
        "seed": Param(
            1000, type="integer", minimum=0, maximum=2**31 - 1, title="Seed", section=how
        ),
        "alpha": Param(
            0.05, type="number", exclusiveMinimum=0, maximum=0.5, title="α", section=how
        ),
        "budget": Param(
            4.0,
            type="number",
            exclusiveMinimum=0,
            maximum=100,
            title="GPU budget",
            section=how,
            description="In full-run equivalents (clips run / clips)",
        ),
        **_serving_params(),
        "alert_id": _alert("Afterwards"),
    }


def ablate_params() -> dict[str, Param]:
    """The ablation form, in sections. Its targets and dataset default to the deployment
    config's for the series' candidate and baseline branches."""
    from airflow.sdk import Param

    what, where, how = "Which night", "Where it runs", "What to try"
    return {
        "nightly": Param(
            "", type="string", title="Night", section=what, description="The confirmed night"
        ),
        **one_series_fields("ablate", what, where),
        "candidate_target": _target("Candidate target", where),
        "baseline_target": _target("Baseline target", where),
        "ablations": Param(
            None,
            type=["null", "array"],
            maxItems=16,
            title="Ablations",
            section=how,
            description="Names of the config's named_overrides, or [{name, overrides, why}] "
            "with eager/batching/sampling keys (empty: the shipped four)",
        ),
        "seed": Param(
            3000, type="integer", minimum=0, maximum=2**31 - 1, title="First seed", section=how
        ),
        "control": Param(
            25, type="integer", minimum=0, maximum=10_000, title="Control clips", section=how
        ),
        "budget": Param(
            1.0,
            type="number",
            exclusiveMinimum=0,
            maximum=100,
            title="GPU budget",
            section=how,
            description="In full-run equivalents (clips run / clips): seeds are added until "
            "every ablation is decided or the budget's rounds are spent",
        ),
        **_serving_params(),
        "alert_id": _alert("Afterwards"),
    }


def regrade_params() -> dict[str, Param]:
    """The re-grade form, in sections. Every grader field is empty by default: the deployment
    config's grader for the run's series (jobs/regrade.py); a value overrides it once."""
    from airflow.sdk import Param

    from omni_tasks.grading.asr import BACKENDS
    from omni_tasks.grading.windows import HARNESS_WINDOW, WINDOWS

    which, how = "Which run", "How it is graded (empty: the config's grader for its series)"

    def choice(title: str, values: Any, description: str) -> Param:
        # Proposals, not a select showing `null`; the pattern is the allow-list.
        return Param(
            None,
            type=["null", "string"],
            title=title,
            section=how,
            examples=list(values),
            pattern=one_of(values),
            description=description,
        )

    return {
        "run_key": Param(
            "",
            type="string",
            minLength=1,
            title="Run key",
            section=which,
            description="The run whose stored audio to grade (`omni-tasks runs list`)",
        ),
        "backend": choice("ASR backend", BACKENDS, "Its pinned default model"),
        "precision": Param(
            None, type=["null", "string"], maxLength=20, title="Precision", section=how
        ),
        "window": choice(
            "Window policy", WINDOWS, "Empty: the harness version's policy, else truncate30"
        ),
        "harness_version": choice(
            "Reference harness",
            HARNESS_WINDOW,
            "The vllm-omni reference harness the re-grade must match",
        ),
        "device": Param(
            None,
            type=["null", "string"],
            pattern=r"^(cpu|cuda|npu)(:[0-9]{1,2})?$",
            title="Device",
            section=how,
            examples=["cuda", "cpu"],
        ),
        "batch_size": Param(
            None, type=["null", "integer"], minimum=1, maximum=64, title="Batch size", section=how
        ),
    }


def ab_params() -> dict[str, Param]:
    from airflow.sdk import Param

    return {
        "repo": Param("", type="string", description="OWNER/NAME (one of the config's ab.repos)"),
        "pr": Param(None, type=["null", "integer"], minimum=1),
        "base_sha": Param("", type="string", pattern="^[0-9a-f]{40}$"),
        "head_sha": Param("", type="string", pattern="^[0-9a-f]{40}$"),
        "series": Param(
            None,
            type=["null", "string"],
            description="BENCHMARK|MODEL|LANE of a config series (default: ab.series)",
        ),
        "budget": Param(None, type=["null", "integer"], minimum=1),
    }
