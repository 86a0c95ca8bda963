"""Statistics, comparisons and the nightly gate against the real Postgres."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import psycopg
from typer.testing import CliRunner

from bench.artifacts import ABShape, ab_artifacts
from omni_tasks.cli import app
from omni_tasks.gates.policy import load_policy
from tests.factories import ab_files

runner = CliRunner()
WEAK = ABShape(stable_broken=80, regressed=35, improved=12)  # REGRESSED, p ~ 4e-4


def run(*args: str) -> str:
    r = runner.invoke(app, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def import_pair(
    tmp_path: Path,
    shape: ABShape = ABShape(),
    date: str = "20261128-020000",
    seed: int = 0,
    cand_branch: str = "dev/vllm-align",
) -> tuple[str, str]:
    base, cand = ab_files(tmp_path, shape, seed=seed, date=date)
    a = run("import", "vllm-omni", str(base), "--branch", "main", "--commit", "a1a1a1a").strip()
    b = run(
        "import", "vllm-omni", str(cand), "--branch", cand_branch, "--commit", "b1b1b1b"
    ).strip()
    return a, b


def test_reported_ab_is_an_obvious_confirmed_regression(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    a, b = import_pair(tmp_path)
    cmp = json.loads(
        run("compare", "--baseline", a, "--candidate", b, "--tail-threshold", "1.0", "--json")
    )
    for key in (
        "n_paired",
        "stable_broken",
        "regressed",
        "improved",
        "stable_ok",
        "mcnemar_p",
        "mcnemar_p_improve",
        "delta_tail_fraction",
        "delta_tail_fraction_ci",
        "delta_capped_mean_wer",
        "delta_capped_mean_wer_ci",
        "delta_mean_wer",
        "verdict",
        "reasons",
        "baseline",
        "candidate",
    ):
        assert key in cmp, key
    assert (cmp["stable_broken"], cmp["regressed"], cmp["improved"]) == (80, 71, 9)
    assert cmp["mcnemar_p"] < 1e-6 and cmp["verdict"] == "REGRESSED"
    assert cmp["baseline"]["n_broken"] == 89 and cmp["candidate"]["n_broken"] == 151
    assert len(cmp["top_regressed"]) == 5

    decisions = json.loads(run("gate", "--nightly", "2026-11-28", "--json"))
    assert len(decisions) == 1
    d = decisions[0]
    assert {
        "verdict",
        "confirmed",
        "mcnemar_p",
        "mcnemar_p_holm",
        "candidate_branch",
        "baseline_branch",
        "variant",
        "reasons",
    } <= set(d)
    assert (d["verdict"], d["confirmed"], d["candidate_branch"], d["baseline_branch"]) == (
        "REGRESSED",
        True,
        "dev/vllm-align",
        "main",
    )
    stored = db.execute(
        "SELECT verdict, confirmed, policy ->> 'policy_version' AS v FROM omni.gate_decision"
    ).fetchall()
    assert [(r["verdict"], r["confirmed"]) for r in stored] == [("REGRESSED", True)]
    assert stored[0]["v"].startswith(f"{load_policy().version}+")
    # Human output carries the same story.
    text = run("compare", "--baseline", a, "--candidate", b)
    assert "regressed 71" in text and "REGRESSED" in text


def test_stats_json_keys_and_recompute_is_idempotent(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    a, _ = import_pair(tmp_path)
    s1 = json.loads(run("stats", a, "--json"))
    for key in (
        "n_expected",
        "n_scored",
        "n_failed",
        "n_infra",
        "coverage",
        "mean_wer",
        "median_wer",
        "capped_mean_wer",
        "corpus_wer",
        "tail_fraction",
        "tail_fraction_ci",
        "runaway_fraction",
        "top10_error_share",
        "failure_modes",
        "origins",
        "questions",
        "statements",
    ):
        assert key in s1, key
    s2 = json.loads(run("stats", a, "--json"))
    assert s1 == s2
    assert db.execute("SELECT count(*) AS n FROM omni.run_stats").fetchone()["n"] == 1


def test_two_weak_nights_confirm_whatever_order_they_are_gated(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    import_pair(tmp_path, WEAK, date="20261126-020000", seed=1)
    import_pair(tmp_path, WEAK, date="20261127-020000", seed=2)
    later = json.loads(run("gate", "--nightly", "2026-11-27", "--json"))[0]
    assert later["verdict"] == "REGRESSED" and not later["confirmed"]
    # Backfilling the night before confirms the later one (and not itself).
    earlier = json.loads(run("gate", "--nightly", "2026-11-26", "--json"))[0]
    assert earlier["verdict"] == "REGRESSED" and not earlier["confirmed"]
    rows = db.execute("SELECT nightly, confirmed FROM omni.gate_decision ORDER BY nightly")
    assert [r["confirmed"] for r in rows] == [False, True]


def test_a_backfilled_night_confirms_the_night_two_after_it(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    """Three nights three days apart (consecutive under the 3-day window): the last is
    REGRESSED, and only all three pooled confirm it (the unit test's arithmetic,
    tests/unit/analysis/test_gate_audit.py). Gating the first night late reaches it."""
    shapes = {"20": (44, 12), "23": (16, 5), "26": (27, 4)}
    for day, (regressed, improved) in shapes.items():
        shape = ABShape(stable_broken=60, regressed=regressed, improved=improved)
        import_pair(tmp_path, shape, date=f"202611{day}-020000", seed=int(day))
    for day in ("23", "26"):
        run("gate", "--nightly", f"2026-11-{day}")
    rows = db.execute("SELECT verdict, confirmed FROM omni.gate_decision ORDER BY nightly")
    assert [(r["verdict"], r["confirmed"]) for r in rows][-1] == ("REGRESSED", False)
    run("gate", "--nightly", "2026-11-20")
    rows = db.execute("SELECT nightly, confirmed FROM omni.gate_decision ORDER BY nightly")
    assert [r["confirmed"] for r in rows] == [False, False, True]


def test_missing_expected_branch_and_low_coverage_are_infra(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    import_pair(tmp_path)
    out = json.loads(
        run(
            "gate",
            "--nightly",
            "2026-11-28",
            "--expect",
            "main",
            "--expect",
            "dev/vllm-align",
            "--expect",
            "dev/other",
            "--json",
        )
    )
    by_branch = {d["candidate_branch"]: d for d in out}
    assert by_branch["dev/other"]["verdict"] == "INFRA"
    assert "no run for dev/other" in by_branch["dev/other"]["reasons"][0]
    assert by_branch["dev/vllm-align"]["verdict"] == "REGRESSED"

    doc_path = tmp_path / "low.json"
    base, cand = ab_files(tmp_path, date="20261129-020000")
    doc = json.loads(cand.read_text())
    for item in doc["seed_tts_wer_eval_items"][:40]:
        item.clear()
        item.update(utterance_id=f"gone{id(item)}", locale="en", error="request_failed")
    doc_path.write_text(json.dumps(doc))
    run("import", "vllm-omni", str(base), "--branch", "main")
    run("import", "vllm-omni", str(doc_path), "--branch", "dev/vllm-align")
    d = json.loads(run("gate", "--nightly", "2026-11-29", "--json"))[0]
    assert d["verdict"] == "INFRA" and "coverage" in " ".join(d["reasons"])


def test_fingerprint_mismatch_is_infra_unless_forced(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    a, b = import_pair(tmp_path)
    db.execute("UPDATE omni.run SET execution_fingerprint = 'h100x2' WHERE run_key = %s", (a,))
    db.execute("UPDATE omni.run SET execution_fingerprint = 'h200x2' WHERE run_key = %s", (b,))
    db.commit()
    cmp = json.loads(run("compare", "--baseline", a, "--candidate", b, "--json"))
    assert cmp["verdict"] == "INFRA" and "execution_fingerprint differs" in cmp["reasons"][0]
    forced = json.loads(run("compare", "--baseline", a, "--candidate", b, "--force", "--json"))
    assert forced["verdict"] == "REGRESSED"
    assert any("forced despite" in w for w in forced["warnings"])


def _import_seeds(db: psycopg.Connection, tmp_path: Path, artifact_seeds: tuple[int, int]) -> None:
    """Two runs per branch of one night (seeds 0 and 1), from the artifacts of `artifact_seeds`."""
    for seed, artifact_seed in zip((0, 1), artifact_seeds, strict=True):
        base, cand = ab_files(tmp_path, seed=artifact_seed, date="20261128-020000")
        doc_b, doc_c = json.loads(base.read_text()), json.loads(cand.read_text())
        for doc, branch in ((doc_b, "main"), (doc_c, "dev/vllm-align")):
            p = tmp_path / f"{branch.replace('/', '_')}_{seed}.json"
            p.write_text(json.dumps(doc))
            run(
                "import",
                "vllm-omni",
                str(p),
                "--branch",
                branch,
                "--run-key",
                f"{branch}:seed{seed}",
            )
        db.execute("UPDATE omni.run SET seed = %s WHERE run_key LIKE %s", (seed, f"%seed{seed}"))
        db.commit()


def test_run_groups_in_the_gate(db: psycopg.Connection, tmp_path: Path) -> None:
    """Two seeds per branch: the gate uses the within-clip permutation test."""
    _import_seeds(db, tmp_path, (0, 1))
    d = json.loads(run("gate", "--nightly", "2026-11-28", "--json"))[0]
    assert d["verdict"] == "REGRESSED"
    assert d["group_test"]["size_baseline"] == 2 and d["group_test"]["size_candidate"] == 2
    assert "permutation" in d["group_test"]["method"]


def test_copies_are_not_counted_as_seeds(db: psycopg.Connection, tmp_path: Path) -> None:
    """One artifact imported twice per side (as two "seeds"): the copies are counted once, so
    the night is the paired comparison of one run a side, and the reasons say so. (Counted as
    two independent seeds, the audit's paired p of .0067 became 6.2e-6: a one-night
    confirmation.)"""
    _import_seeds(db, tmp_path, (0, 0))
    d = json.loads(run("gate", "--nightly", "2026-11-28", "--json"))[0]
    assert d.get("group_test") is None
    # The paired comparison of the first run a side, as `compare` makes it.
    one = json.loads(
        run("compare", "--baseline", "main:seed0", "--candidate", "dev/vllm-align:seed0", "--json")
    )
    assert d["mcnemar_p"] == one["mcnemar_p"]
    copies = [r for r in d["reasons"] if "item for item" in r]
    assert len(copies) == 2 and all("counted once" in r for r in copies)


def test_trend_reads_stored_series(db: psycopg.Connection, tmp_path: Path) -> None:
    """Eight nights: four like main, four like the rebase, on one branch -> one step."""
    for day in range(1, 9):
        base, cand = ab_files(tmp_path, seed=day, date=f"202611{day:02d}-020000")
        path = base if day <= 4 else cand  # main-like nights, then rebase-like nights
        key = run("import", "vllm-omni", str(path), "--branch", "dev/vllm-align").strip()
        run("stats", key)
    out = json.loads(run("trend", "--branch", "dev/vllm-align", "--json"))
    assert len(out["series"]) == 8
    assert [p["nightly"] for p in out["change_points"]] == ["2026-11-05"]
    assert out["change_points"][0]["after"] > out["change_points"][0]["before"]


def test_wer_json_carries_failure_mode_and_flags(db: psycopg.Connection) -> None:
    out = json.loads(
        run(
            "wer",
            "I feel sick, what should I do?",
            "I'm sorry to hear that you're feeling unwell here are some general "
            "steps you can take rest and stay hydrated",
            "--json",
        )
    )
    assert out["failure_mode"] == "over_generation"
    assert out["is_question"] and out["answered"] and not out["task_leak"]
    leak = json.loads(
        run(
            "wer",
            "Appearances are deceptive.",
            "speech in the same language and style as the reference audio",
            "--json",
        )
    )
    assert leak["task_leak"] and leak["failure_mode"] == "over_generation"
    assert json.loads(run("wer", "a b c", "a b c", "--json"))["failure_mode"] is None


def test_noise_calibration_from_stored_runs(db: psycopg.Connection, tmp_path: Path) -> None:
    keys = []
    for seed in (3, 4, 5):
        base, _ = ab_files(tmp_path, seed=seed)
        keys.append(
            run(
                "import", "vllm-omni", str(base), "--branch", "main", "--run-key", f"aa{seed}"
            ).strip()
        )
    cal = json.loads(run("noise", *keys, "--tail-threshold", "1.0", "--json"))
    assert cal["n_runs"] == 3 and cal["n_clips"] == 1088
    # Independent layouts of 89 broken clips: discordance near 2 * 0.082 * 0.918.
    assert 0.12 < cal["psi"] < 0.18
    assert cal["mde"] > 0.03


def test_gating_a_night_twice_leaves_tables_identical(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    import_pair(tmp_path)
    checksum = (
        "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS h FROM ("
        "  SELECT nightly, candidate_branch, verdict, confirmed, mcnemar_p, mcnemar_p_holm,"
        "         reasons FROM omni.gate_decision"
        "  UNION ALL SELECT NULL, NULL, NULL, comparable, p_regress, delta_tail_fraction,"
        "         result - 'comparison_id' FROM omni.comparison"
        "  UNION ALL SELECT NULL, NULL, NULL, NULL, tail_fraction, capped_mean_wer, stats"
        "         FROM omni.run_stats) t"
    )
    first = json.loads(run("gate", "--nightly", "2026-11-28", "--json"))
    h1 = db.execute(checksum).fetchone()["h"]
    second = json.loads(run("gate", "--nightly", "2026-11-28", "--json"))
    db.commit()
    assert db.execute(checksum).fetchone()["h"] == h1
    assert first == second
    n = db.execute(
        "SELECT (SELECT count(*) FROM omni.gate_decision) d, "
        "(SELECT count(*) FROM omni.comparison) c"
    ).fetchone()
    assert (n["d"], n["c"]) == (1, 1)


def test_stored_policy_versions_move_to_the_decision_hash_and_keep_their_streak(
    db: psycopg.Connection, tmp_path: Path, monkeypatch
) -> None:
    import yaml

    from omni_tasks.config import get_settings
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.store import policy_versions

    # The built-in policy of the time (2026.11: one-night confirmation at 1e-4, no
    # per-benchmark overrides), configured as a deployment still running it would.
    old = {**load_policy().model_dump(), "version": "2026.11", "confirm_p": 1e-4}
    old["benchmarks"] = {}
    path = tmp_path / "policy-2026.11.yaml"
    path.write_text(yaml.safe_dump(old))
    monkeypatch.setenv("OMNI_GATE_POLICY", str(path))
    get_settings.cache_clear()
    policy = load_policy()
    # The version the code before issue 18 stored for that policy.
    assert policy.legacy_policy_version == "2026.11+3576947b" != policy.policy_version
    import_pair(tmp_path, WEAK, date="20261126-020000", seed=1)
    import_pair(tmp_path, WEAK, date="20261127-020000", seed=2)
    run("gate", "--nightly", "2026-11-26")
    # Night 1 as the old code stored it: its version and policy document without the new fields.
    legacy = policy.model_dump(exclude={"max_same_margin", "confirm_window_days"})
    db.execute(
        "UPDATE omni.gate_decision SET policy_version = %s, policy = %s",
        (
            policy.legacy_policy_version,
            json.dumps({**legacy, "policy_version": policy.legacy_policy_version, "m": 1}),
        ),
    )
    db.execute("UPDATE omni.run_stats SET policy_version = %s", (policy.legacy_policy_version,))
    policy_versions.rehash(db)
    db.commit()
    versions = {
        r["policy_version"] for r in db.execute("SELECT policy_version FROM omni.gate_decision")
    }
    assert versions == {policy.policy_version}
    stats = {r["policy_version"] for r in db.execute("SELECT policy_version FROM omni.run_stats")}
    assert stats == {policy.policy_version}
    # The next night continues the streak of the migrated one.
    later = json.loads(run("gate", "--nightly", "2026-11-27", "--json"))[0]
    assert later["verdict"] == "REGRESSED" and later["confirmed"]
    monkeypatch.delenv("OMNI_GATE_POLICY")
    get_settings.cache_clear()


def test_a_report_only_policy_edit_keeps_the_streak(
    db: psycopg.Connection, tmp_path: Path, monkeypatch
) -> None:
    import yaml

    from omni_tasks.config import get_settings
    from omni_tasks.gates.policy import load_policy

    import_pair(tmp_path, WEAK, date="20261126-020000", seed=1)
    import_pair(tmp_path, WEAK, date="20261127-020000", seed=2)
    run("gate", "--nightly", "2026-11-26")
    edited = tmp_path / "policy.yaml"
    edited.write_text(yaml.safe_dump({**load_policy().model_dump(), "slo_tail": 0.2}))
    monkeypatch.setenv("OMNI_GATE_POLICY", str(edited))
    get_settings.cache_clear()
    try:
        later = json.loads(run("gate", "--nightly", "2026-11-27", "--json"))[0]
    finally:
        monkeypatch.delenv("OMNI_GATE_POLICY")
        get_settings.cache_clear()
    assert later["verdict"] == "REGRESSED" and later["confirmed"]


def test_gate_fail_on_exits_3_on_a_matching_decision(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    import_pair(tmp_path, ABShape(), date="20261126-020000", seed=1)  # the reported A/B
    out = runner.invoke(app, ["gate", "--nightly", "2026-11-26", "--fail-on", "regressed,infra"])
    assert out.exit_code == 3 and "REGRESSED (--fail-on regressed,infra)" in out.output
    same = ABShape(stable_broken=80, regressed=4, improved=4)
    import_pair(tmp_path, same, date="20261127-020000", seed=2)
    out = runner.invoke(app, ["gate", "--nightly", "2026-11-27", "--fail-on", "regressed"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, ["gate", "--fail-on", "broken"])
    assert out.exit_code == 2 and "unknown verdict(s) broken" in out.output


def test_gate_json_outcome_prints_the_whole_night(db: psycopg.Connection, tmp_path: Path) -> None:
    """`gate --json` prints the decisions (unchanged); with --outcome, the night's outcome:
    its transitions and the messages queued, with their idempotency keys."""
    import_pair(tmp_path, ABShape(), date="20261126-020000", seed=1)  # the reported A/B
    out = runner.invoke(app, ["gate", "--nightly", "2026-11-26", "--json", "--outcome"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert [(d["verdict"], d["confirmed"]) for d in doc["decisions"]] == [("REGRESSED", True)]
    assert [(t["kind"], t["nightly"]) for t in doc["transitions"]] == [("open", "2026-11-26")]
    keys = [m["idempotency_key"] for m in doc["messages"]]
    assert keys[0].endswith("|2026-11-26|open") and doc["events"][0]["kind"] == "regression_opened"
    again = runner.invoke(app, ["gate", "--nightly", "2026-11-26", "--json"])
    assert [d["verdict"] for d in json.loads(again.stdout)] == ["REGRESSED"]  # decisions only


def test_bench_against_a_refusing_target_fails_and_says_why(db: psycopg.Connection) -> None:
    out = runner.invoke(
        app,
        [
            "bench",
            "--target",
            "http://127.0.0.1:1",
            "--branch",
            "main",
            "--limit",
            "2",
            "--timeout",
            "5",
        ],
    )
    assert out.exit_code == 1, out.output
    assert "failed: 2 of 2 clips: connection failed" in out.output
    row = db.execute("SELECT status FROM omni.run").fetchone()
    assert row["status"] == "failed"  # stored, nothing lost


def _sim_night(db, tmp_path, drop: float | None, night: dt.date) -> None:
    """A night whose tails are the same on both branches; every clip carries SIM (or none,
    `drop=None`), the candidate's lower by `drop` on 60 % of the clips."""
    from bench.artifacts import parse_artifact
    from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
    from omni_tasks.store.runs import save_run
    from tests.factories import SAME, write_json

    base, cand = ab_artifacts(SAME, seed=7, date=night.strftime("%Y%m%d-020000"))
    for doc, lower in ((base, 0.0), (cand, drop)):
        for i, item in enumerate(doc["seed_tts_wer_eval_items"]):
            if drop is not None:
                item["sim"] = 0.75 - (lower if i % 5 < 3 else 0.0)
    for branch, doc in (("main", base), ("rebase", cand)):
        art = parse_artifact(write_json(tmp_path / f"{night}_{branch}.json", doc), branch=branch)
        save_run(db, art.spec, art.clips, (ARTIFACT_GRADER, art.grades))


def test_speaker_similarity_is_a_second_gated_metric_where_the_series_gates_it(
    db, tmp_path
) -> None:
    """MiniCPM-o's upstream gate is WER and SIM: with `sim_margin` the series' one verdict is
    REGRESSED when SIM fell clip by clip though the tail did not move; without it, SAME; and
    a gated SIM that nobody computed is never a pass."""
    from omni_tasks.contracts.night import NightQuestion
    from omni_tasks.jobs.decide import decide_series
    from omni_tasks.series import Series

    series = Series("seed_tts_en")
    night = dt.date(2026, 11, 20)
    _sim_night(db, tmp_path, 0.05, night)

    def verdict(**kw) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
        out = decide_series(db, NightQuestion(series, night, "main", **kw), load_policy())
        (d,) = out.decisions
        return d.verdict, d.reasons

    assert verdict()[0] == "SAME"  # the tail alone: nothing moved
    gated, reasons = verdict(sim_margin=0.02)
    assert gated == "REGRESSED"
    assert any(r.startswith("speaker similarity: mean Δ -0.030") for r in reasons), reasons

    later = night + dt.timedelta(days=1)
    _sim_night(db, tmp_path, None, later)
    out = decide_series(db, NightQuestion(series, later, "main", sim_margin=0.02), load_policy())
    (d,) = out.decisions
    assert d.verdict == "INFRA" and any("never a pass" in r for r in d.reasons)


def test_change_points_on_the_nightly_paired_delta(db: psycopg.Connection, tmp_path: Path) -> None:
    """Eight gated nights, four A/A-like and four regressed: the paired Δ series against main
    has one change point, where the regression began (descriptive, as `trend`)."""
    from tests.factories import REGRESS, SAME, store_night

    for i in range(8):
        store_night(db, tmp_path, i, SAME if i < 4 else REGRESS)
    out = json.loads(
        run(
            "trend",
            "--branch",
            "rebase",
            "--metric",
            "paired_delta",
            "--baseline",
            "main",
            "--json",
        )
    )
    assert len(out["series"]) == 8
    (point,) = out["change_points"]
    assert point["nightly"] == out["series"][4]["nightly"]
    assert point["before"] < 0.01 < 0.05 < point["after"]
