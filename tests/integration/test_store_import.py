"""Importing artifacts into the real Postgres: idempotency, conflicts, replace, runs list/show."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.series import Series
from omni_tasks.store.migrate import migrate
from tests.factories import ab_files, small_artifact, write_json

runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


def counts(db: psycopg.Connection) -> tuple[int, int, int, int]:
    row = db.execute(
        "SELECT (SELECT count(*) FROM omni.run) r, (SELECT count(*) FROM omni.clip_audio) a, "
        "(SELECT count(*) FROM omni.grading) g, (SELECT count(*) FROM omni.clip_grade) c"
    ).fetchone()
    return row["r"], row["a"], row["g"], row["c"]


def test_migrate_twice_is_a_noop(db: psycopg.Connection) -> None:
    assert migrate(db) == []
    assert migrate(db) == []
    r = invoke("db", "migrate")
    assert r.exit_code == 0 and "up to date" in r.output


def test_import_1088_items_then_idempotent_then_conflict_then_replace(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    base, _ = ab_files(tmp_path)
    r = invoke("import", "vllm-omni", str(base), "--branch", "main", "--commit", "abc1234")
    assert r.exit_code == 0, r.output
    key = r.stdout.strip().splitlines()[-1]
    assert key.startswith("seed_tts_en:2026-11-28:main:abc1234:default")
    assert counts(db) == (1, 1088, 1, 1088)

    again = invoke("import", "vllm-omni", str(base), "--branch", "main", "--commit", "abc1234")
    assert again.exit_code == 0 and "unchanged" in again.output
    assert counts(db) == (1, 1088, 1, 1088)

    doc = json.loads(base.read_text())
    doc["seed_tts_wer_eval_items"][7]["wer"] = 0.5
    changed = write_json(tmp_path / "changed.json", doc)
    refused = invoke("import", "vllm-omni", str(changed), "--branch", "main", "--commit", "abc1234")
    assert refused.exit_code == 1
    assert "already exists with different content" in refused.output
    assert "sim_00007" in refused.output and "wer" in refused.output
    assert (
        db.execute("SELECT wer FROM omni.clip_grade WHERE utt_id = 'sim_00007'").fetchone()["wer"]
        != 0.5
    )

    replaced = invoke(
        "import", "vllm-omni", str(changed), "--branch", "main", "--commit", "abc1234", "--replace"
    )
    assert replaced.exit_code == 0 and "replaced" in replaced.output
    assert counts(db) == (1, 1088, 1, 1088)
    assert (
        db.execute("SELECT wer FROM omni.clip_grade WHERE utt_id = 'sim_00007'").fetchone()["wer"]
        == 0.5
    )


def test_malformed_artifact_writes_nothing(db: psycopg.Connection, tmp_path: Path) -> None:
    good = write_json(tmp_path / "good.json", small_artifact(3))
    doc = small_artifact(3)
    doc["seed_tts_wer_eval_items"][1]["utterance_id"] = "u0"
    bad = write_json(tmp_path / "bad.json", doc)
    r = runner.invoke(app, ["import", "vllm-omni", str(good), str(bad), "--branch", "main"])
    assert r.exit_code == 1
    assert "bad.json" in r.output and "duplicate utterance_id" in r.output
    assert "Traceback" not in r.output
    assert counts(db) == (0, 0, 0, 0)


def test_runs_list_and_show_json(db: psycopg.Connection, tmp_path: Path) -> None:
    doc = small_artifact(4)
    doc["seed_tts_wer_eval_items"].append(
        {"utterance_id": "x", "locale": "en", "error": "no_pcm", "reference_raw": "Hi there."}
    )
    doc["generated_texts"].append("Hi there.")
    path = write_json(tmp_path / "a.json", doc)
    key = invoke(
        "import", "vllm-omni", str(path), "--branch", "dev/vllm-align", "--nightly", "2026-11-20"
    ).stdout.strip()
    listed = json.loads(invoke("runs", "list", "--json").stdout)
    assert [r["run_key"] for r in listed] == [key]
    shown = json.loads(invoke("runs", "show", key, "--json").stdout)
    assert {
        "run_key",
        "branch",
        "commit",
        "nightly",
        "status",
        "n_clips",
        "clips_by_status",
        "gradings",
    } <= set(shown)
    assert shown["branch"] == "dev/vllm-align" and shown["nightly"] == "2026-11-20"
    assert shown["clips_by_status"] == {"ok": 4, "no_audio": 1}
    assert shown["n_clips"] == 5 and shown["status"] == "complete"
    assert shown["gradings"][0]["n_grades"] == 4
    missing = runner.invoke(app, ["runs", "show", "nope"])
    assert missing.exit_code == 1 and "no run with key 'nope'" in missing.output


def test_summary_only_import(db: psycopg.Connection, tmp_path: Path) -> None:
    doc = small_artifact(3)
    del doc["seed_tts_wer_eval_items"]
    r = invoke("import", "vllm-omni", str(write_json(tmp_path / "s.json", doc)), "--branch", "main")
    assert r.exit_code == 0
    assert "summary_only" in r.output and "gate needs per-clip rows" in r.output
    assert counts(db) == (1, 0, 0, 0)


def test_reader_role_can_only_select(db: psycopg.Connection, tmp_path: Path) -> None:
    invoke(
        "import",
        "vllm-omni",
        str(write_json(tmp_path / "a.json", small_artifact(2))),
        "--branch",
        "main",
    )
    with db.transaction():
        db.execute("SET LOCAL ROLE omni_reader")
        assert db.execute("SELECT count(*) AS n FROM omni.clip_audio").fetchone()["n"] == 2
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("SET LOCAL ROLE omni_reader")
        db.execute("DELETE FROM omni.run")


def test_summary_only_nights_are_history_in_trend_report_and_dashboard(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    """Today's nightly artifacts have no per-clip rows: their official mean still makes a
    trend (marked summary-only), the report lists it, the dashboard's official series has it."""
    from omni_tasks.grafana.dashboards import trend_dashboard
    from omni_tasks.reports.html import nightly_report
    from tests.fakes.grafana_api import expand, panel_queries

    for day, mean, items in (("20261101", 0.021, False), ("20261102", 0.034, True)):
        doc = small_artifact(3, date=f"{day}-021500")
        doc["seed_tts_content_error_mean"] = mean
        if not items:
            del doc["seed_tts_wer_eval_items"]
        else:  # one clip misheard: the recomputed mean is 1/3 of that clip's WER
            doc["seed_tts_wer_eval_items"][0].update(wer=0.1, asr_raw="sentence numbr 0")
            doc["seed_tts_content_error_mean"] = 0.1 / 3
        path = write_json(tmp_path / f"{day}.json", doc)
        assert invoke("import", "vllm-omni", str(path), "--branch", "main").exit_code == 0
    r = invoke("trend", "--branch", "main", "--metric", "official_mean", "--json")
    series = json.loads(r.stdout)["series"]
    assert [(s["nightly"], s["summary_only"]) for s in series] == [
        ("2026-11-01", True),
        ("2026-11-02", False),
    ]
    assert series[0]["official_mean"] == pytest.approx(0.021)
    text = invoke("trend", "--branch", "main", "--metric", "official_mean")
    assert "1 summary-only, marked *" in text.output and "0.0210 *" in text.output

    html = nightly_report(db, Series("seed_tts_en"), dt.date(2026, 11, 1), 0.5)
    assert "summary-only: no per-clip rows, not gated" in html
    query = panel_queries(trend_dashboard())["Capped mean WER (and the legacy uncapped mean)/C"]
    variables = {
        "benchmark": "seed_tts_en",
        "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "lane": "default",
        "branch": ["main"],
        "variant": ["default"],
        "tau": "0.5",
    }
    rows = db.execute(
        expand(query, variables, "2026-10-01T00:00:00Z", "2026-12-01T00:00:00Z")
    ).fetchall()
    assert [r["metric"] for r in rows] == [
        "main / default official (summary-only)",
        "main / default official",
    ]


def test_runs_list_keys_are_whole_and_commands_take_a_unique_prefix(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    keys = []
    for branch in ("main", "dev/vllm-align"):
        path = write_json(tmp_path / f"{branch.replace('/', '_')}.json", small_artifact(3))
        keys.append(invoke("import", "vllm-omni", str(path), "--branch", branch).stdout.strip())
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["runs", "list"])
    for key in keys:  # whole on one line at 80 columns, so it can be copied
        assert any(key in line for line in narrow.output.splitlines()), narrow.output
    # What fits is shown whole (not seven columns squeezed to nothing); the rest is named, and
    # --wide shows it.
    assert "…" not in narrow.output and "not shown at this width" in narrow.output
    assert all(len(line) <= 80 for line in narrow.output.splitlines())
    wide = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["runs", "list", "--wide"])
    assert "gradings" in wide.output and "not shown" not in wide.output
    common = next(i for i, (a, b) in enumerate(zip(*keys, strict=False)) if a != b)
    unique = keys[1][: common + 1]
    shown = json.loads(invoke("runs", "show", unique, "--json").stdout)
    assert shown["run_key"] == keys[1]
    assert invoke("stats", unique, "--json").exit_code == 0
    ambiguous = runner.invoke(app, ["runs", "show", keys[0][:common]])
    assert ambiguous.exit_code == 1 and "start of several run keys" in ambiguous.output


def test_runs_delete_needs_yes_and_removes_everything_of_the_run(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    key = invoke(
        "import",
        "vllm-omni",
        str(write_json(tmp_path / "a.json", small_artifact(4))),
        "--branch",
        "main",
    ).stdout.strip()
    refused = runner.invoke(app, ["runs", "delete", key])
    assert refused.exit_code == 1 and "pass --yes" in refused.output
    assert counts(db) == (1, 4, 1, 4)
    done = invoke("runs", "delete", key[:-2], "--yes")
    assert done.exit_code == 0 and f"deleted {key}" in done.output
    assert counts(db) == (0, 0, 0, 0)
    gone = runner.invoke(app, ["runs", "show", key])
    assert gone.exit_code == 1 and "no run with key" in gone.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats", "k", "--tail-threshold", "nan"], "--tail-threshold must be a positive"),
        (
            ["compare", "--baseline", "a", "--candidate", "b", "--tail-threshold", "0"],
            "--tail-threshold must be a positive",
        ),
        (["runs", "list", "--limit", "-1"], "Invalid value for '--limit'"),
    ],
)
def test_out_of_range_options_are_refused_with_a_message(db, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    out = runner.invoke(app, args)
    assert out.exit_code != 0 and message in out.output


def test_an_import_and_a_run_made_here_share_one_prompt_fingerprint(db, tmp_path: Path) -> None:
    """Both hash (system prompt, user format); migration 0008 moves imports stored the old way
    (the system prompt alone) to it, so they pair with runs made here."""
    import hashlib

    from omni_tasks.store import prompt_fingerprints

    key = invoke(
        "import",
        "vllm-omni",
        str(write_json(tmp_path / "a.json", small_artifact(3))),
        "--branch",
        "main",
    ).stdout.strip()
    made = (
        invoke(
            "bench",
            "--target",
            "simulator:clean",
            "--branch",
            "rebase",
            "--limit",
            "2",
            "--transcript-mode",
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    rows = {
        r["run_key"]: r
        for r in db.execute("SELECT run_key, system_prompt, prompt_fingerprint FROM omni.run")
    }
    assert rows[key]["prompt_fingerprint"] == rows[made.split()[0]]["prompt_fingerprint"]
    old = hashlib.sha256(rows[key]["system_prompt"].encode()).hexdigest()
    db.execute("UPDATE omni.run SET prompt_fingerprint = %s WHERE run_key = %s", (old, key))
    prompt_fingerprints.rehash(db)
    after = db.execute("SELECT prompt_fingerprint FROM omni.run WHERE run_key = %s", (key,))
    assert after.fetchone()["prompt_fingerprint"] == rows[key]["prompt_fingerprint"] != old


def test_an_empty_grading_never_becomes_the_one_statistics_read(db, tmp_path: Path) -> None:
    from omni_tasks.records import Grader
    from omni_tasks.store.runs import get_run, insert_grading, latest_grading

    path = write_json(tmp_path / "a.json", small_artifact(3))
    key = invoke("import", "vllm-omni", str(path), "--branch", "main").stdout.strip()
    run_id = get_run(db, key).run_id
    graded, grader = latest_grading(db, run_id, key)
    empty = insert_grading(db, run_id, Grader("nothing-heard", {"backend": "none"}), [])
    db.execute("UPDATE omni.grading SET status = 'complete' WHERE grading_id = %s", (empty,))
    db.commit()
    assert latest_grading(db, run_id, key) == (graded, grader)  # newer, but it graded nothing
    assert latest_grading(db, run_id, key, "nothing-heard")[0] == empty  # asked by name: it


def test_a_run_compared_with_itself_is_refused_with_a_reason(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    key = invoke(
        "import",
        "vllm-omni",
        str(write_json(tmp_path / "a.json", small_artifact(4))),
        "--branch",
        "main",
    ).stdout.strip()
    out = runner.invoke(app, ["compare", "--baseline", key, "--candidate", key[:-2]])
    assert out.exit_code == 1 and "compared with itself" in out.output
    assert db.execute("SELECT count(*) AS n FROM omni.comparison").fetchone()["n"] == 0


def test_a_series_without_runs_that_night_names_the_series_that_have_them(
    db: psycopg.Connection, tmp_path: Path
) -> None:
    from tests.factories import SAME, store_night

    night = store_night(db, tmp_path, 0, SAME)  # seed_tts_en on the default series
    db.commit()
    for args in (
        ["gate", "--benchmark", "daily_omni", "--nightly", str(night)],
        [
            "report",
            "--out",
            str(tmp_path / "r.html"),
            "--benchmark",
            "daily_omni",
            "--nightly",
            str(night),
        ],
    ):
        out = runner.invoke(app, args)
        assert out.exit_code == 1, out.output
        assert (
            f"no runs of daily_omni · Qwen3-Omni-30B-A3B-Instruct · default on {night}"
            in " ".join(out.output.split())
        )
        assert "seed_tts_en" in out.output and "--benchmark" in out.output
    trend = runner.invoke(app, ["trend", "--branch", "rebase", "--benchmark", "daily_omni"])
    assert trend.exit_code == 1 and "series with runs: seed_tts_en" in " ".join(
        trend.output.split()
    )
    # A gate that expects branches still decides a night without runs: INFRA, not an error.
    expected = runner.invoke(
        app,
        [
            "gate",
            "--benchmark",
            "daily_omni",
            "--nightly",
            str(night),
            "--expect",
            "main",
            "--expect",
            "rebase",
            "--json",
        ],
    )
    assert expected.exit_code == 0, expected.output


def test_import_names_the_series_model_and_lane(db: psycopg.Connection, tmp_path: Path) -> None:
    """An artifact does not say which model or lane produced it: --model and --lane put the
    run in that series (stats, runs list and the gate read it there); a bad name is refused
    before anything is stored."""
    path = write_json(tmp_path / "a.json", small_artifact(3))
    out = invoke(
        "import", "vllm-omni", str(path), "--branch", "main",
        "--model", "openbmb/MiniCPM-o-4_5", "--lane", "cuda-h100",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    key = out.stdout.strip()
    (row,) = db.execute("SELECT run_key, model, lane FROM omni.run").fetchall()
    assert (row["run_key"], row["model"], row["lane"]) == (
        key,
        "openbmb/MiniCPM-o-4_5",
        "cuda-h100",
    )
    listed = json.loads(invoke("runs", "list", "--model", "openbmb/MiniCPM-o-4_5", "--json").stdout)
    assert [r["run_key"] for r in listed] == [key]
    gate = invoke("gate", "--model", "openbmb/MiniCPM-o-4_5", "--lane", "cuda-h100", "--json")
    assert gate.exit_code == 0, gate.output  # the night is found in that series…
    assert runner.invoke(app, ["gate", "--json"]).exit_code == 1  # …and not in the default one

    bad = runner.invoke(
        app, ["import", "vllm-omni", str(path), "--branch", "main", "--lane", "a|b"]
    )
    assert bad.exit_code == 2 and "'|'" in bad.output
    bad_model = runner.invoke(
        app, ["import", "vllm-omni", str(path), "--branch", "main", "--model", "org/../etc"]
    )
    assert bad_model.exit_code == 2 and "not a model id" in bad_model.output
    assert db.execute("SELECT count(*) AS n FROM omni.run").fetchone()["n"] == 1
