"""Checks of a deployment config and a trigger form, each error naming its field: what the
config offers a form (`form_choices`), a form through its allow-list (deployment/forms.py),
and a series complete enough to run (check_complete)."""

from __future__ import annotations

from pathlib import Path

from omni_tasks import benchmarks
from omni_tasks.deployment import forms
from omni_tasks.deployment.reading import ConfigError, Doc, names
from omni_tasks.deployment.schema import NightlyParams

# What `form_choices` may offer the form: models, vLLM builds and targets.
CHOICE_KEYS = ("server.model", "environment.vllm", "targets")


def form_fields(form: Doc) -> Doc:
    """A trigger form's given fields (the empty defaults dropped)."""
    return {k: v for k, v in form.items() if v not in (None, "", [], {})}


def check_form(kind: str, given: Doc, config: Doc) -> Doc:
    """The form's fields through its allow-list (deployment/forms.py), against `config`
    (the series' fields with the config's form_choices and named_overrides)."""
    try:
        return forms.check_form(kind, given, config)
    except forms.FormError as exc:
        raise ConfigError(str(exc)) from None


def check_choices(doc: Doc, where: str) -> None:
    """The config's `form_choices`: a list of values for each field a form may choose."""
    choices = doc.get("form_choices")
    if choices is None:
        return
    if not isinstance(choices, dict) or not all(isinstance(v, list) for v in choices.values()):
        raise ConfigError(f"{where}: form_choices: a mapping of field → list of values")
    for key in choices:
        if key not in CHOICE_KEYS:
            raise ConfigError(
                f"{where}: form_choices.{key}: only {names(CHOICE_KEYS)} are offered this way "
                "(other fields are the config's alone)"
            )


def check_complete(p: NightlyParams, where: str) -> None:
    """What a run needs before its first request: a target per branch, known names, a dataset
    that exists, a grader that can be built."""
    from omni_tasks.grading.asr import GraderConfigError, GraderSpec
    from omni_tasks.synthesis.profiles import profile_names

    def fail(field: str, message: str) -> None:
        raise ConfigError(f"{where}: {field}: {message}")

    if not p.branches:
        fail("branches", "no branch to benchmark")
    for branch in p.branches:
        if branch not in p.targets:
            fail("targets", f"branch {branch!r} has no target (targets: {names(p.targets)})")
    for branch in p.targets:
        if branch not in p.branches:
            fail(f"targets.{branch}", f"not one of the branches ({names(p.branches)})")
        url = p.target_url(branch)
        if url.startswith("simulator:"):
            profile = url.split(":", 1)[1]
            if profile not in profile_names():
                fail(
                    f"targets.{branch}",
                    f"unknown simulator profile {profile!r} (known: {names(profile_names())})",
                )
        elif url != "vllm-serve" and not url.startswith(("http://", "https://")):
            fail(
                f"targets.{branch}", f"{url!r} is not http(s)://…, simulator:PROFILE or vllm-serve"
            )
    if p.baseline not in p.branches:
        fail("baseline", f"{p.baseline!r} is not one of the branches ({names(p.branches)})")
    runnable = [b.id for b in benchmarks.all_benchmarks() if b.runnable]
    if p.benchmark is not None and p.benchmark not in runnable:
        fail("benchmark", f"unknown benchmark {p.benchmark!r} (known: {names(runnable)})")
    if not p.seeds:
        fail("seeds", "at least one seed")
    why = benchmarks.get(p.bench).check_dataset(p.dataset)
    if why is not None:
        fail("dataset", why)
    for branch in p.targets:
        deploy = p.target_deploy_config(branch)
        if deploy is not None and not Path(deploy).is_file():
            fail(f"targets.{branch}.deploy_config", f"{deploy} does not exist")
    if p.auto_bisect.enabled and not p.repo:
        fail("auto_bisect.enabled", "auto-bisect lists the commits of a range: set repo")
    if benchmarks.get(p.bench).graded_by_asr(p.options):
        try:
            GraderSpec.from_params(p.grader).resolved()
        except TypeError as exc:
            fail("grader", str(exc).replace("GraderSpec.__init__() ", ""))
        except GraderConfigError as exc:
            fail("grader", str(exc))
