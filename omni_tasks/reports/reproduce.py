"""The command that reproduces a stored run: what `runs show`, the HTML report and the alert
print next to a result. Built from what the run recorded (target, commit, seed, dataset,
variant, prompt template, subset, harness version) and its newest grading's grader."""

from __future__ import annotations

import shlex
from typing import Any

from omni_tasks import benchmarks
from omni_tasks.store.runs import RunDescription

_GRADER_FLAGS = (
    ("backend", "--backend"),
    ("model", "--model"),
    ("precision", "--precision"),
    ("window", "--window"),
    ("harness_version", "--harness-version"),
)


def reproduce_command(run: dict[str, Any], grader: dict[str, Any] | None = None) -> str:
    """A shell command line (quoted); an imported run names its import instead."""
    config, source = run.get("config") or {}, run.get("source") or {}
    if "target" not in config:
        where = source.get("path") or source.get("file") or "ARTIFACT.json"
        args = ["omni-tasks", "import", "vllm-omni", str(where), "--branch", run["branch"]]
        if run.get("commit_sha"):
            args += ["--commit", run["commit_sha"]]
        return shlex.join(args)
    target = str(config["target"])
    if (run.get("stack") or {}).get("server_log"):  # a server the nightly launched and stopped
        target = f"http://SERVER-AT-{str(run.get('commit_sha') or 'COMMIT')[:12]}:8091"
    args = ["omni-tasks", "bench", "--target", target, "--branch", run["branch"]]
    option = _bench_option(str(run.get("benchmark") or ""))
    if option != "seed_tts":
        args += ["--benchmark", option]
    args += ["--dataset", str(config.get("dataset", "demo")), "--nightly", str(run["nightly"])]
    args += ["--variant", run.get("variant") or "default"]
    if option == "seed_tts":
        args += ["--prompt-template", str(config.get("prompt_template", "seed-tts-default"))]
    if run.get("commit_sha"):
        args += ["--commit", run["commit_sha"]]
    # A seed that was asked for but never sent still names the run (its key): ask for it again.
    seed = run.get("seed") if run.get("seed") is not None else config.get("seed_requested")
    if seed is not None:
        args += ["--seed", str(seed)]
    subset = str(run.get("dataset_fingerprint") or "").rpartition(":first")[2]
    if ":first" in str(run.get("dataset_fingerprint") or "") and subset.isdigit():
        args += ["--limit", subset]
    if config.get("transcript_mode"):
        args.append("--transcript-mode")
    # Only seed-TTS is graded by an ASR the flags choose; other families judge by their rule.
    described = ((grader or {}).get("grader") or {}) if option == "seed_tts" else {}
    for field, flag in _GRADER_FLAGS:
        value = described.get(field) or (config.get(field) if field == "harness_version" else None)
        if value:
            args += [flag, str(value)]
    return shlex.join(args)


def reproduce_described(run: RunDescription) -> str:
    """The command for a run as the store describes it (its newest grading's grader)."""
    newest = run.gradings[-1].grader if run.gradings else None
    fields = {
        "config": run.config,
        "source": run.source,
        "stack": run.stack,
        "branch": run.branch,
        "commit_sha": run.commit,
        "benchmark": run.benchmark,
        "nightly": run.nightly,
        "variant": run.variant,
        "seed": run.seed,
        "dataset_fingerprint": run.dataset_fingerprint,
    }
    return reproduce_command(fields, None if newest is None else {"grader": newest})


def _bench_option(benchmark_id: str) -> str:
    try:
        return benchmarks.get(benchmark_id).bench_option
    except benchmarks.UnknownBenchmark:
        return "seed_tts"  # a benchmark no longer registered: the platform's default
