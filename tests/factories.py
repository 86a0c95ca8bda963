"""Builders for test data (real data shapes, made here; nothing copied from real results)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

from bench.artifacts import ABShape, ab_artifacts
from omni_tasks.series import Series

D0 = dt.date(2026, 11, 1)
REGRESS = ABShape(n=1088, stable_broken=80, regressed=71, improved=9)
SAME = ABShape(n=1088, stable_broken=80, regressed=4, improved=4)


def store_night(
    db: Any,
    tmp: Path,
    i: int,
    shape: ABShape | None,
    candidate_commit: str | None = None,
    series: Series | None = None,
) -> dt.date:
    """Import night D0+i's main (+ rebase, unless shape is None) artifacts of a seed_tts_en
    series (the default one unless given) and gate the night (decisions and alert plans), as
    the nightly does after its runs."""
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.decide import decide_series

    date = save_night(db, tmp, i, shape, candidate_commit, series)
    decide_series(
        db,
        NightQuestion(
            series or Series.of({"benchmark": "seed_tts_en"}), date, "main", ("main", "rebase")
        ),
        load_policy(),
    )
    return date


def save_night(
    db: Any,
    tmp: Path,
    i: int,
    shape: ABShape | None,
    candidate_commit: str | None = None,
    series: Series | None = None,
    seeds: tuple[int | None, ...] = (None,),
) -> dt.date:
    """Import night D0+i's main (+ rebase, unless shape is None) artifacts of a seed_tts_en
    series, undecided; with several `seeds`, one run a branch per seed (a run group), each
    seed's pair drawn apart."""
    from bench.artifacts import parse_artifact
    from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
    from omni_tasks.store.runs import save_run

    date = D0 + dt.timedelta(days=i)
    slug = "" if series is None else f"{series.slug}_"
    for seed in seeds:
        draw = 100 + i + (0 if seed is None else 1000 * seed)
        base, cand = ab_artifacts(shape or SAME, seed=draw, date=date.strftime("%Y%m%d-020000"))
        docs = [("main", base)] + ([("rebase", cand)] if shape is not None else [])
        tag = "" if seed is None else f"_seed{seed}"
        for branch, doc in docs:
            path = write_json(tmp / f"{slug}{date}_{branch}{tag}.json", doc)
            commit = (
                candidate_commit if branch == "rebase" and candidate_commit else f"{branch}{i:04d}"
            )
            art = parse_artifact(path, branch=branch, commit=commit)
            spec = dataclasses.replace(art.spec, seed=seed)
            if series is not None:
                spec = dataclasses.replace(spec, model=series.model, lane=series.lane)
            save_run(db, spec, art.clips, (ARTIFACT_GRADER, art.grades))
    return date


def gate_cli(
    db: Any,
    date: dt.date,
    series: Series | None = None,
    expect: tuple[str, ...] = ("main", "rebase"),
) -> list[Any]:
    """Gate a series' night as `omni-tasks gate --json` does (decisions and alert plans, on
    the CLI's own connection: `db`'s work is committed first); the decisions it prints."""
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    db.commit()
    s = series or Series.of({"benchmark": "seed_tts_en"})
    args = ["gate", "--nightly", str(date), "--baseline", "main", "--json"]
    args += ["--benchmark", s.benchmark, "--model", s.model, "--lane", s.lane]
    for branch in expect:
        args += ["--expect", branch]
    out = CliRunner().invoke(app, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return list(json.loads(out.stdout))


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def small_artifact(n: int = 5, date: str = "20261128-021500") -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "utterance_id": f"u{i}",
            "locale": "en",
            "wer": 0.0,
            "reference_raw": f"Sentence number {i}.",
            "asr_raw": f"sentence number {i}",
        }
        for i in range(n)
    ]
    return {
        "model_id": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "date": date,
        "max_concurrency": 10,
        "seed_tts_content_error_mean": 0.0,
        "seed_tts_content_evaluated": n,
        "generated_texts": [f"Sentence number {i}." for i in range(n)],
        "seed_tts_wer_eval_items": items,
    }


def ab_files(
    tmp_path: Path, shape: ABShape = ABShape(), seed: int = 0, date: str = "20261128-020000"
) -> tuple[Path, Path]:
    base, cand = ab_artifacts(shape, seed=seed, date=date)
    return (
        write_json(tmp_path / f"base_{seed}_{date}.json", base),
        write_json(tmp_path / f"cand_{seed}_{date}.json", cand),
    )


def grade_rows(db: Any, run_key: str) -> list[tuple[Any, ...]]:
    """A run's clip grades as (utt_id, status, hypothesis, wer, hyp_words), by utt_id."""
    rows = db.execute(
        "SELECT g.utt_id, g.grade_status, g.hypothesis, g.wer, g.hyp_words FROM omni.clip_grade g "
        "JOIN omni.grading gr USING (grading_id) JOIN omni.run r USING (run_id) "
        "WHERE r.run_key = %s ORDER BY g.utt_id",
        (run_key,),
    ).fetchall()
    return [tuple(r.values()) for r in rows]


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def commit(repo: Path, message: str, author: tuple[str, str] = ("t", "t@t")) -> str:
    """An empty commit on the checked-out branch by `author` (name, email); its SHA."""
    git(
        repo,
        "-c",
        f"user.name={author[0]}",
        "-c",
        f"user.email={author[1]}",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        message,
    )
    return git(repo, "rev-parse", "HEAD")


def git_repo(root: Path, n: int, branch: str) -> list[str]:
    """A repo at `root` with n commits on `branch`; their SHAs, oldest first."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", branch)
    return [commit(root, f"c{i}") for i in range(n)]


def seed_tts_corpus(root: Path, n: int = 1088) -> Path:
    """A seed-tts-eval-shaped locale dir of n sentences (about 10 % questions)."""
    import random

    import numpy as np

    from omni_tasks.evidence.audio import write_audio

    rng = random.Random(5)
    words = "alpha river stone quiet market orange seven garden window yellow bridge".split()
    (root / "prompt-wavs").mkdir(parents=True)
    write_audio(str(root / "prompt-wavs" / "p.wav"), np.full(4800, 0.1, np.float32), 24_000)
    lines = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(6, 14))).capitalize()
        lines.append(
            f"u{i:04d}|prompt|prompt-wavs/p.wav|{text} {i}{'?' if rng.random() < 0.1 else '.'}"
        )
    (root / "meta.lst").write_text("\n".join(lines) + "\n")
    return root


def simulated_night(
    db: Any, dataset: Path, night: dt.date, candidate_target: str, seed: int = 7
) -> None:
    """One gated night of main (simulator:main) against rebase (`candidate_target`), run by the
    benchmark in transcript mode and decided as the nightly decides."""
    from omni_tasks.benchmarks.seed_tts.run import BenchRequest, run_benchmark
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.decide import decide_series
    from omni_tasks.series import Series

    for branch, target in (("main", "simulator:main"), ("rebase", candidate_target)):
        req = BenchRequest(
            target=target,
            branch=branch,
            dataset=str(dataset),
            commit=f"{branch}-head",
            seed=seed,
            nightly=night,
            trigger="nightly",
            transcript_mode=True,
        )
        run_benchmark(db, req, None, show_progress=False)
        db.commit()
    decide_series(
        db,
        NightQuestion(Series.of({"benchmark": "seed_tts_en"}), night, "main", ("main", "rebase")),
        load_policy(),
    )
    db.commit()


def stored_decision(**fields: Any) -> Any:
    """A StoredDecision as the store returns it, with a quiet default for every field not
    given (a unit test names only what it is about)."""
    from omni_tasks.contracts import StoredDecision
    from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL

    defaults: dict[str, Any] = {
        "decision_id": 1,
        "benchmark": "seed_tts_en",
        "model": DEFAULT_MODEL,
        "lane": DEFAULT_LANE,
        "nightly": D0,
        "candidate_branch": "rebase",
        "baseline_branch": "main",
        "variant": "default",
        "verdict": "SAME",
        "confirmed": False,
        "mcnemar_p_holm": None,
        "reasons": [],
        "policy_version": "test",
        "comparison": None,
        "tau": 0.5,
        "candidate_run_id": None,
        "candidate_run_key": None,
        "baseline_run_id": None,
        "airflow_dag_id": None,
        "airflow_run_id": None,
    }
    return StoredDecision(**{**defaults, **fields})
