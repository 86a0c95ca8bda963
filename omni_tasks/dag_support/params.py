"""The DAGs' trigger forms (Airflow Params, in sections): the nightly's, and the one-series
forms of bisect, ablate, regrade and A/B, whose fields are allow-lists (deployment/forms.py). Each
field's schema is forms.FIELDS' (the one definition the task checks again): a Param adds its
default and words (title, section, description, proposals), and may only narrow it."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk import Param


# jsonschema checks a schema against its metaschema on every validation, and Airflow validates
# every Param of every task each time it serializes or compares a DAG: against draft 2020-12's
# metaschema ($dynamicRef) that was a third of an `airflow dags test` (54 ms a nightly form);
# against draft 7's, 11 ms. The forms use no keyword draft 7 lacks.
DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def param(default: Any, **schema: Any) -> Param:
    """An Airflow Param whose schema is read as JSON Schema draft 7 (DRAFT_7)."""
    from airflow.sdk import Param

    return Param(default, **{"$schema": DRAFT_7, **schema})


def form_param(kind: str, field: str, default: Any = None, **words: Any) -> Param:
    """The Param of one field of a form of `kind`: its schema from forms.FIELDS, with a
    default and words (`pattern`, given here, narrows to a list of proposals)."""
    from omni_tasks.deployment import forms

    return param(default, **{**forms.field_schema(kind, field), **words})


def nightly_params() -> dict[str, Param]:
    """The trigger form of omni_nightly, in sections. Every field is empty by default: the
    deployment config (omni_tasks.deployment) supplies the run; a non-empty field overrides it
    once. Choices are offered as proposals (`examples`), never as a select showing `null`; the
    first task checks every value against the config before any other work."""
    from omni_tasks import benchmarks

    def field(name: str, section: str, title: str, description: str, **kw: Any) -> Param:
        return form_param(
            "nightly", name, title=title, section=section, description=description, **kw
        )

    what, where, how = "What to benchmark", "Where it runs", "How it is graded"
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    return {
        "benchmark": field(
            "benchmark", what, "Benchmark", "See `omni-tasks benchmarks list`", examples=runnable
        ),
        "branches": field("branches", what, "Branches", 'e.g. ["main", "vllm-rebase"]'),
        "baseline": field("baseline", what, "Baseline branch", "The gate compares against it"),
        "dataset": field(
            "dataset",
            what,
            "Dataset",
            "demo, a seed-tts-eval locale dir or a Daily-Omni root (under a trusted root)",
        ),
        "limit": field("limit", what, "Only the first N items", "Unset: all"),
        "seeds": field("seeds", what, "Seeds", "Several form a run group, e.g. [1, 2, 3]"),
        "variant": field("variant", what, "Variant name", "Names a deploy-override variant"),
        **{
            name: field(name, what, o.title, o.description, **_examples(o.examples))
            for name, o in benchmarks.form_options().items()
        },
        "targets": field(
            "targets",
            where,
            "Target per branch",
            "branch → simulator:PROFILE, or a target the deployment config names (its "
            'series\' targets and form_choices.targets), e.g. {"main": "simulator:main"}',
            examples=[{"main": "simulator:main", "rebase": "simulator:rebase"}],
        ),
        "commits": field(
            "commits",
            where,
            "Commit per branch",
            'branch → commit SHA (7–40 hex), e.g. {"rebase": "3f2a9c1"}; default: the head',
        ),
        "environment": field(
            "environment",
            where,
            "vLLM build",
            '{"vllm": BUILD}, one of the config\'s form_choices (environment.vllm); the rest '
            "of the environment is the config's",
        ),
        "server": field(
            "server",
            where,
            "Model",
            '{"model": NAME}, one of the config\'s form_choices (server.model); the rest of the '
            "server is the config's",
        ),
        "overrides": field(
            "overrides",
            where,
            "Deploy overrides",
            "The name of one of the config's named_overrides, or "
            '{"stages": [{"stage_id": 0, "enforce_eager": true}]} (eager mode, batching and '
            "sampling keys only)",
        ),
        "grader": field(
            "grader",
            how,
            "Grader",
            'e.g. {"backend": "faster-whisper", "harness_version": "0.30.0"} (the model is the '
            "config's)",
        ),
    }


def _examples(values: tuple[str, ...]) -> dict[str, list[str]]:
    return {"examples": list(values)} if values else {}


def _serving_params(kind: str) -> dict[str, Param]:
    """The serving choices a one-series form (bisect, ablate) may make; the rest is the
    configured series' (docs/operators/security.md)."""
    field = functools.partial(form_param, kind)
    return {
        "grader": field("grader", {}, description="Grader choices"),
        "environment": field(
            "environment", {}, description="{vllm: BUILD} among the config's form_choices"
        ),
        "server": field("server", {}, description="{model: NAME} among the config's form_choices"),
        "overrides": field(
            "overrides",
            {},
            description="A named override of the config, or eager/batching/sampling keys",
        ),
    }


def one_of(values: Any) -> str:
    """A JSON-schema pattern that takes exactly these strings."""
    return "^(" + "|".join(re.escape(str(v)) for v in values) + ")$"


def one_series_fields(capability: str, what: str, where: str) -> dict[str, Param]:
    """The fields a bisect's and an ablation's forms share: which series (only benchmarks
    whose family has `capability`: any other is refused at submit), its branches, and where
    it runs (empty target and dataset: the configured series', deployment.one_series_form)."""
    from omni_tasks import benchmarks

    able = [b.id for b in benchmarks.all_benchmarks() if capability in b.capabilities]
    field = functools.partial(form_param, capability)  # the form's kind: bisect, ablate
    return {
        "benchmark": field(
            "benchmark",
            title="Benchmark",
            section=what,
            examples=able,
            pattern=one_of(able),
            description=f"A benchmark whose family has the {capability} capability "
            "(`omni-tasks benchmarks list`)",
        ),
        "lane": field(
            "lane",
            "default",
            title="Lane",
            section=what,
            description="Hardware lane: the lane of a configured series (default: the series')",
        ),
        "branch": field("branch", "rebase", title="Candidate branch", section=what),
        "baseline": field("baseline", "main", title="Baseline branch", section=what),
        "variant": field("variant", "default", title="Variant", section=what),
        "dataset": field(
            "dataset",
            title="Dataset",
            section=where,
            description="Empty: the series' configured dataset",
        ),
        **{
            name: field(name, o.default, title=o.title, section=where, description=o.description)
            for name, o in benchmarks.form_options().items()
        },
    }


def _target(kind: str, field: str, title: str, section: str) -> Param:
    return form_param(
        kind,
        field,
        title=title,
        section=section,
        description="Empty: the config's target for that branch. Else vllm-serve, a target the "
        "config names, or simulator:PROFILE",
    )


def _alert(kind: str) -> Param:
    return form_param(
        kind,
        "alert_id",
        title="Alert",
        section="Afterwards",
        description="The alert whose Slack thread gets the result",
    )


def bisect_params() -> dict[str, Param]:
    """The bisect form, in sections. Its target and dataset default to the deployment
    config's for the series and branch; the simulator is only what the demo names."""
    what, where, how = "What to bisect", "Where it runs", "How hard to look"
    field = functools.partial(form_param, "bisect")
    return {
        "history": field(
            "history",
            [],
            title="Commits",
            section=what,
            description="Oldest (good) to newest (bad); the alert's range when it came from one",
        ),
        **one_series_fields("bisect", what, where),
        "axis": field(
            "axis",
            "vllm-omni",
            title="Repository bisected",
            section=what,
            description="vllm-omni commits, or vLLM commits with vllm-omni at omni_commit",
        ),
        "omni_commit": field(
            "omni_commit", title="vllm-omni commit held", section=what, description="axis vllm only"
        ),
        "target": _target("bisect", "target", "Target", where),
        "first_bad": field(
            "first_bad",
            title="Planted first bad commit",
            section=where,
            description="simulator:commit-history only",
        ),
        "limit": field("limit", title="Only the first N items", section=how),
        "seed": field("seed", 1000, title="Seed", section=how),
        "alpha": field("alpha", 0.05, title="α", section=how),
        "budget": field(
            "budget",
            4.0,
            title="GPU budget",
            section=how,
            description="In full-run equivalents (clips run / clips)",
        ),
        "control": field("control", 50, title="Control clips", section=how),
        **_serving_params("bisect"),
        "alert_id": _alert("bisect"),
    }


def ablate_params() -> dict[str, Param]:
    """The ablation form, in sections. Its targets and dataset default to the deployment
    config's for the series' candidate and baseline branches."""
    what, where, how = "Which night", "Where it runs", "What to try"
    field = functools.partial(form_param, "ablate")
    return {
        "nightly": field(
            "nightly", "", title="Night", section=what, description="The confirmed night"
        ),
        **one_series_fields("ablate", what, where),
        "candidate_target": _target("ablate", "candidate_target", "Candidate target", where),
        "baseline_target": _target("ablate", "baseline_target", "Baseline target", where),
        "ablations": field(
            "ablations",
            title="Ablations",
            section=how,
            description="Names of the config's named_overrides, or [{name, overrides, why}] "
            "with eager/batching/sampling keys (empty: the shipped four)",
        ),
        "seed": field("seed", 3000, title="First seed", section=how),
        "control": field("control", 25, title="Control clips", section=how),
        "budget": field(
            "budget",
            1.0,
            title="GPU budget",
            section=how,
            description="In full-run equivalents (clips run / clips): seeds are added until "
            "every ablation is decided or the budget's rounds are spent",
        ),
        "stage_isolation": field(
            "stage_isolation",
            True,
            title="Stage isolation",
            section=how,
            description="Also compare both stacks' thinker texts (the talker skipped)",
        ),
        **_serving_params("ablate"),
        "alert_id": _alert("ablate"),
    }


def regrade_params() -> dict[str, Param]:
    """The re-grade form, in sections. Every grader field is empty by default: the deployment
    config's grader for the run's series (jobs/regrade.py); a value overrides it once."""
    from omni_tasks.grading.asr import BACKENDS
    from omni_tasks.harness import HARNESS_WINDOW, WINDOWS

    which, how = "Which run", "How it is graded (empty: the config's grader for its series)"

    def choice(title: str, values: Any, description: str) -> Param:
        # Proposals, not a select showing `null`; the pattern is the allow-list.
        return param(
            None,
            type=["null", "string"],
            title=title,
            section=how,
            examples=list(values),
            pattern=one_of(values),
            description=description,
        )

    return {
        "run_key": param(
            "",
            type="string",
            minLength=1,
            title="Run key",
            section=which,
            description="The run whose stored audio to grade (`omni-tasks runs list`)",
        ),
        "backend": choice("ASR backend", BACKENDS, "Its pinned default model"),
        "precision": param(
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
        "device": param(
            None,
            type=["null", "string"],
            pattern=r"^(cpu|cuda|npu)(:[0-9]{1,2})?$",
            title="Device",
            section=how,
            examples=["cuda", "cpu"],
        ),
        "batch_size": param(
            None, type=["null", "integer"], minimum=1, maximum=64, title="Batch size", section=how
        ),
    }


def ab_params() -> dict[str, Param]:
    """The A/B form (the webhook fills it from a labelled PR); the config's `ab:` section
    decides the repositories, series and budget (deployment.resolve_ab)."""
    field = functools.partial(form_param, "ab")
    return {
        "repo": field("repo", "", description="OWNER/NAME (one of the config's ab.repos)"),
        "pr": field("pr"),
        "base_sha": field("base_sha", ""),
        "head_sha": field("head_sha", ""),
        "series": field(
            "series", description="BENCHMARK|MODEL|LANE of a config series (default: ab.series)"
        ),
        "budget": field("budget"),
    }
