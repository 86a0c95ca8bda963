"""The command that reproduces a stored run: what `runs show`, the HTML report and the alert
print next to a result. Built from what the run recorded (target, commit, seed, dataset,
variant, prompt template, subset, harness version) and its newest grading's grader."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from omni_tasks import benchmarks
from omni_tasks.contracts import JsonObject
from omni_tasks.records import RunSpec
from omni_tasks.store.runs import RunDescription

_GRADER_FLAGS = (
    ("backend", "--backend"),
    ("model", "--model"),
    ("precision", "--precision"),
    ("window", "--window"),
    ("harness_version", "--harness-version"),
)


@dataclass(frozen=True)
class Reproducible:
    """What a run recorded that its command is built from."""

    benchmark: str
    branch: str
    nightly: str
    variant: str
    commit_sha: str | None
    seed: int | None
    dataset_fingerprint: str | None
    config: JsonObject
    source: JsonObject
    stack: JsonObject

    @classmethod
    def of_run(cls, run: RunSpec | RunDescription) -> Reproducible:
        """A run as recorded, or as the store describes it (its commit named `commit`)."""
        return cls(
            benchmark=run.benchmark,
            branch=run.branch,
            nightly=str(run.nightly),
            variant=run.variant,
            commit_sha=run.commit_sha if isinstance(run, RunSpec) else run.commit,
            seed=run.seed,
            dataset_fingerprint=run.dataset_fingerprint,
            config=run.config,
            source=run.source,
            stack=run.stack,
        )


def reproduce_command(run: Reproducible, grader: JsonObject | None = None) -> str:
    """A shell command line (quoted); an imported run names its import instead. `grader` is
    the newest grading's grader description (its backend, model, window…)."""
    config, source = run.config, run.source
    if "target" not in config:
        where = source.get("path") or source.get("file") or "ARTIFACT.json"
        args = ["omni-tasks", "import", "vllm-omni", str(where), "--branch", run.branch]
        if run.commit_sha:
            args += ["--commit", run.commit_sha]
        return shlex.join(args)
    target = str(config["target"])
    if run.stack.get("server_log"):  # a server the nightly launched and stopped
        target = f"http://SERVER-AT-{str(run.commit_sha or 'COMMIT')[:12]}:8091"
    args = ["omni-tasks", "bench", "--target", target, "--branch", run.branch]
    family = _family(run.benchmark)
    if family.bench_option != "seed_tts":
        args += ["--benchmark", family.bench_option]
    args += ["--dataset", str(config.get("dataset", "demo")), "--nightly", run.nightly]
    args += ["--variant", run.variant or "default", *family.reproduce_args(config)]
    if run.commit_sha:
        args += ["--commit", run.commit_sha]
    # A seed that was asked for but never sent still names the run (its key): ask for it again.
    seed = run.seed if run.seed is not None else config.get("seed_requested")
    if seed is not None:
        args += ["--seed", str(seed)]
    fingerprint = run.dataset_fingerprint or ""
    subset = fingerprint.rpartition(":first")[2]
    if ":first" in fingerprint and subset.isdigit():
        args += ["--limit", subset]
    # Only seed-TTS is graded by an ASR the flags choose; other families judge by their rule.
    described = (grader or {}) if family.bench_option == "seed_tts" else {}
    for field, flag in _GRADER_FLAGS:
        value = described.get(field) or (config.get(field) if field == "harness_version" else None)
        if value:
            args += [flag, str(value)]
    return shlex.join(args)


def reproduce_described(run: RunDescription) -> str:
    """The command for a run as the store describes it (its newest grading's grader)."""
    newest = run.gradings[-1].grader if run.gradings else None
    return reproduce_command(Reproducible.of_run(run), newest)


def _family(benchmark_id: str) -> benchmarks.Benchmark:
    try:
        return benchmarks.get(benchmark_id)
    except benchmarks.UnknownBenchmark:
        return benchmarks.get("seed_tts_en")  # no longer registered: the platform's default
