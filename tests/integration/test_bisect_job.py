"""The bisect job on stored nightly runs: the endpoints' runs on record choose the clips (no
full run is spent), the endpoints are checked on fresh seeds, and the result says both."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from omni_tasks.benchmarks.seed_tts.run import BenchRequest, run_benchmark
from omni_tasks.jobs.bisect import BisectParams, run_bisect
from omni_tasks.series import DEFAULT_MODEL
from tests.factories import seed_tts_corpus

NIGHT = dt.date(2026, 11, 20)


def _nightly(
    db, dataset: Path, history: list[str], first_bad: str, commit: str, seed: int = 7
) -> str:
    req = BenchRequest(
        target="simulator:commit-history",
        branch="rebase",
        dataset=str(dataset),
        commit=commit,
        seed=seed,
        nightly=NIGHT,
        trigger="nightly",
        transcript_mode=True,
        history=tuple(history),
        first_bad=first_bad,
    )
    outcome = run_benchmark(db, req, None, show_progress=False)
    db.commit()
    return outcome.run_key


def test_stored_endpoint_runs_choose_the_clips(db, tmp_path: Path, monkeypatch) -> None:
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    get_settings.cache_clear()
    dataset = seed_tts_corpus(tmp_path / "en", 400)
    history = [f"{i:02d}" + "d" * 38 for i in range(8)]
    first_bad = history[5]
    keys = [_nightly(db, dataset, history, first_bad, c) for c in (history[0], history[-1])]

    p = BisectParams(
        history=history,
        target="simulator:commit-history",
        first_bad=first_bad,
        transcript_mode=True,
        dataset=str(dataset),
    )
    r = run_bisect(db, p, NIGHT + dt.timedelta(days=1))
    assert r.selection == "stored runs" and r.first_bad == first_bad
    assert r.endpoints is not None and r.endpoints.verified
    # Every bisect run is on the chosen clips: none re-runs an endpoint on all 400.
    sizes = db.execute("SELECT r.n_expected FROM omni.run r WHERE r.trigger = 'bisect'").fetchall()
    assert sizes and {s["n_expected"] for s in sizes} == {len(r.discriminating)}
    assert r.full_runs == sum(s["n_expected"] for s in sizes) / 400 <= p.budget
    event = db.execute("SELECT details FROM omni.event WHERE kind = 'bisect_result'").fetchone()
    details = event["details"]
    assert details["selection"] == "stored runs" and details["selected_by"] == keys
    assert details["endpoints"]["verified"] is True
    assert "endpoint check at seeds" in details["summary"]
    assert details["summary"].startswith(f"bisect {p.bisect_id} (seed_tts_en, variant default, ")


def test_endpoints_of_one_behaviour_name_no_commit(db, tmp_path: Path, monkeypatch) -> None:
    """A range whose ends behave alike (the step is before it: every commit is the rebase's
    behaviour): the stored runs differ on some clips by chance, fresh runs do not show the bad
    end worse, and the bisection names no commit."""
    from omni_tasks.config import get_settings

    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    get_settings.cache_clear()
    dataset = seed_tts_corpus(tmp_path / "en", 400)
    history = [f"{i:02d}" + "e" * 38 for i in range(8)]
    for seed, c in ((7, history[0]), (8, history[-1])):  # two nights, two seeds
        _nightly(db, dataset, history, history[0], c, seed)
    p = BisectParams(
        history=history,
        target="simulator:commit-history",
        first_bad=history[0],
        transcript_mode=True,
        dataset=str(dataset),
    )
    r = run_bisect(db, p, NIGHT + dt.timedelta(days=1))
    assert r.first_bad is None and r.steps == []
    assert r.regressed > 0  # chance differences chose clips; the check refused them
    assert r.endpoints is not None and not r.endpoints.verified
    event = db.execute("SELECT text FROM omni.event WHERE kind = 'bisect_result'").fetchone()
    assert event["text"].startswith("no regression between these endpoints")


def test_the_bisect_command_names_a_daily_omni_culprit(db) -> None:
    """`omni-tasks bisect` on a multiple-choice series: the commit-history simulator answers as
    main before the planted commit and as rebase from it; the bisection of its 48 demo
    questions (fewer than one seed's worth of the budget would cover whole) names it."""
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    history = [f"{i:02d}" + "c" * 38 for i in range(8)]
    args = ["bisect", *history, "--target", "simulator:commit-history", "--benchmark"]
    out = CliRunner().invoke(
        app, [*args, "daily_omni", "--first-bad", history[5], "--nightly", "2026-11-21", "--json"]
    )
    assert out.exit_code == 0, out.output
    r = json.loads(out.stdout)
    assert (r["first_bad"], r["last_good"]) == (history[5], history[4])
    keys = [row["run_key"] for row in db.execute("SELECT run_key FROM omni.run ORDER BY run_id")]
    assert keys and all(k.startswith(f"bisect:{r['bisect_id']}:") for k in keys)
    assert {row["benchmark"] for row in db.execute("SELECT benchmark FROM omni.run")} == {
        "daily_omni"
    }


def test_two_endpoints_from_an_alert_bisect_every_commit_of_the_configured_repo(
    db, tmp_path: Path, monkeypatch
) -> None:
    """An alert's Next line gives `omni-tasks bisect GOOD BAD` for its series: the command
    reads the series' repository from the deployment config, as the bisect DAG's form does,
    and bisects every commit between the two (here 6), naming the planted one."""
    import yaml
    from typer.testing import CliRunner

    from omni_tasks.cli import app
    from tests.factories import git_repo

    commits = git_repo(tmp_path / "repo", 8, "rebase")
    config = tmp_path / "nightly.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "benchmark": "daily_omni",
                "branches": ["main", "rebase"],
                "baseline": "main",
                "targets": {"main": "simulator:main", "rebase": "simulator:commit-history"},
                "repo": str(tmp_path / "repo"),
            }
        )
    )
    monkeypatch.setenv("OMNI_NIGHTLY_CONFIG", str(config))
    monkeypatch.setenv("OMNI_TRUSTED_ROOTS", json.dumps([str(tmp_path)]))
    args = ["bisect", commits[0], commits[-1], "--target", "simulator:commit-history"]
    out = CliRunner().invoke(
        app,
        [*args, "--benchmark", "daily_omni", "--first-bad", commits[5], "--json"],
    )
    assert out.exit_code == 0, out.output
    assert "bisecting the 6 commits between" in out.stderr
    r = json.loads(out.stdout)
    assert (r["first_bad"], r["last_good"]) == (commits[5], commits[4])
    # A commit the repository does not hold is refused, naming git's complaint.
    bad = CliRunner().invoke(
        app, ["bisect", commits[0], "f" * 40, *args[3:], "--benchmark", "daily_omni"]
    )
    assert bad.exit_code == 1 and "bisect:" in bad.output


def test_a_summary_only_family_is_refused_before_any_run(db) -> None:
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    history = ["a" * 40, "b" * 40]
    out = CliRunner().invoke(
        app, ["bisect", *history, "--target", "simulator:main", "--benchmark", "duplex_eval"]
    )
    assert out.exit_code == 2, out.output
    assert "duplex_eval" in out.output and "no 'bisect' capability" in out.output
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 0


def test_bisects_of_one_rebase_on_two_series_run_side_by_side(db) -> None:
    """One rebase regresses a Daily-Omni series and a seed-TTS one: their bisects run over the
    same commits with the same target, seed and dataset, each under its own run keys, and each
    names its culprit (the simulator plants a different first bad commit per series). The
    seed-TTS demo's 100 clips show the planted step weakly: its bisect gets the budget to run
    every chosen clip."""
    from typer.testing import CliRunner

    from omni_tasks.cli import app

    history = [f"{i:02d}" + "f" * 38 for i in range(8)]
    common = ["bisect", *history, "--target", "simulator:commit-history", "--json"]
    found = {}
    for benchmark, first_bad, extra in (
        ("daily_omni", history[5], []),
        ("seed_tts_en", history[3], ["--transcript-mode", "--budget", "12"]),
    ):
        out = CliRunner().invoke(
            app, [*common, "--benchmark", benchmark, "--first-bad", first_bad, *extra]
        )
        assert out.exit_code == 0, out.output
        r = json.loads(out.stdout)
        assert r["first_bad"] == first_bad, (benchmark, r)
        found[benchmark] = r["bisect_id"]
    assert found["daily_omni"] != found["seed_tts_en"]
    rows = db.execute("SELECT run_key, benchmark FROM omni.run").fetchall()
    for benchmark, bisect_id in found.items():
        mine = {r["benchmark"] for r in rows if r["run_key"].startswith(f"bisect:{bisect_id}:")}
        assert mine == {benchmark}
    results = db.execute("SELECT details FROM omni.event WHERE kind = 'bisect_result'")
    assert sorted((e["details"]["first_bad"], e["details"]["series"]) for e in results) == [
        (history[3], f"seed_tts_en|{DEFAULT_MODEL}|default"),
        (history[5], f"daily_omni|{DEFAULT_MODEL}|default"),
    ]
