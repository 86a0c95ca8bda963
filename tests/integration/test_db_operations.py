"""Operations on the results DB: `db migrate --plan` lists without applying, and `db backup` /
`db restore` round-trip a gated night (every table's rows, a run's statistics, the migration
records) into another database, with the audio root's manifest checked."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import psycopg
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.config import reset_settings
from omni_tasks.store.db import connect
from tests.conftest import scratch_database
from tests.factories import seed_tts_corpus, simulated_night

runner = CliRunner()


def _snapshot(dsn: str) -> dict[str, object]:
    """Every omni table's row count, the runs' statistics and the migration records."""
    with connect(dsn) as conn:
        tables = [
            r["table_name"]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'omni' "
                "AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
        ]
        counts = {
            t: conn.execute(f'SELECT count(*) AS n FROM omni."{t}"').fetchone()["n"] for t in tables
        }
        stats = conn.execute(
            "SELECT r.run_key, s.stats::text AS stats FROM omni.run_stats s "
            "JOIN omni.grading g USING (grading_id) JOIN omni.run r USING (run_id) "
            "ORDER BY r.run_key"
        ).fetchall()
        migrations = conn.execute(
            "SELECT version, checksum FROM public.omni_schema_migrations ORDER BY version"
        ).fetchall()
    return {"counts": counts, "stats": stats, "migrations": migrations}


def test_migrate_plan_lists_pending_migrations_and_applies_none(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    with scratch_database("omni_plan") as dsn:
        monkeypatch.setenv("OMNI_DATABASE_URL", dsn)
        monkeypatch.setenv("OMNI_HOME", str(tmp_path / "home"))
        reset_settings()
        out = runner.invoke(app, ["db", "migrate", "--plan"])
        assert out.exit_code == 0, out.output
        planned = [
            line.split()[1] for line in out.output.splitlines() if line.startswith("pending")
        ]
        migrations = sorted(p.stem for p in Path("sql/migrations").glob("*.sql"))
        assert planned == migrations  # every one, in order…
        with psycopg.connect(dsn) as conn:
            schemas = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'omni'").fetchall()
        assert schemas == []  # …and none applied
        assert runner.invoke(app, ["db", "migrate"]).exit_code == 0
        again = runner.invoke(app, ["db", "migrate", "--plan"])
        assert "schema is up to date" in again.output
        reset_settings()


def test_backup_and_restore_round_trip_a_gated_night(
    db, results_dsn: str, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    simulated_night(
        db, seed_tts_corpus(tmp_path / "en", 60), dt.date(2026, 11, 20), "simulator:rebase"
    )
    audio = tmp_path / "audio"
    (audio / "run-a").mkdir(parents=True)
    (audio / "run-a" / "u1.wav").write_bytes(b"RIFF" + bytes(100))
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(audio))
    reset_settings()
    before = _snapshot(results_dsn)
    assert before["counts"]["run"] == 2 and before["stats"]
    dump = tmp_path / "backups" / "omni.dump"
    out = runner.invoke(app, ["db", "backup", str(dump)])
    assert out.exit_code == 0, out.output
    assert "backed up 2 run(s)" in out.output and "1 audio file(s)" in out.output
    manifest = json.loads(dump.with_name("omni.dump.manifest.json").read_text())
    assert manifest["files"] == [{"path": "run-a/u1.wav", "size": 104}]

    with scratch_database("omni_restore") as target_dsn:
        monkeypatch.setenv("OMNI_DATABASE_URL", target_dsn)
        reset_settings()
        refused = runner.invoke(app, ["db", "restore", str(dump)])
        assert refused.exit_code == 1 and "--yes" in refused.output
        (audio / "run-a" / "u1.wav").unlink()  # the audio root lost a file since
        out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
        assert out.exit_code == 0, out.output
        assert "restored 2 run(s)" in out.output and "0 of 1 file(s) in place" in out.output
        assert _snapshot(target_dsn) == before
        plan = runner.invoke(app, ["db", "migrate", "--plan"])
        assert "schema is up to date" in plan.output  # the migration records came along
        reset_settings()


def test_audio_prune_keeps_recent_nights_and_what_an_open_alert_cites(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from omni_tasks.trust.names import path_component
    from tests.factories import store_night

    audio = tmp_path / "audio"
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(audio))
    reset_settings()
    store_night(db, tmp_path, 0, None)  # an old night (main only)
    recent = store_night(db, tmp_path, 1, None)
    db.execute("UPDATE omni.run SET nightly = current_date WHERE nightly = %s", (recent,))
    keys = [r["run_key"] for r in db.execute("SELECT run_key FROM omni.run ORDER BY nightly")]
    cited = store_night(db, tmp_path, 2, None)
    cited_key = db.execute("SELECT run_key FROM omni.run WHERE nightly = %s", (cited,)).fetchone()
    db.execute(
        "INSERT INTO omni.alert (alert_key, kind, state, opened_nightly, last_nightly, details) "
        "VALUES ('k', 'regression', 'open', %s, %s, %s)",
        (cited, cited, json.dumps({"candidate_run": cited_key["run_key"]})),
    )
    for key in [*keys, cited_key["run_key"]]:
        folder = audio / path_component(key)
        folder.mkdir(parents=True)
        for row in db.execute(
            "SELECT a.utt_id FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
            "WHERE r.run_key = %s",
            (key,),
        ).fetchall():
            (folder / f"{row['utt_id']}.wav").write_bytes(b"RIFF" + bytes(1000))
        db.execute(
            "UPDATE omni.clip_audio a SET audio_uri = %s || '/' || a.utt_id || '.wav' "
            "FROM omni.run r WHERE r.run_id = a.run_id AND r.run_key = %s",
            (str(folder), key),
        )
    db.commit()
    old, new = keys
    rows_before = db.execute("SELECT count(*) AS n FROM omni.clip_audio").fetchone()["n"]
    dry = runner.invoke(app, ["audio", "prune", "--older-than", "7", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"would remove {old}" in dry.output and (audio / path_component(old)).is_dir()
    out = runner.invoke(app, ["audio", "prune", "--older-than", "7"])
    assert out.exit_code == 0, out.output
    assert "removed the audio of 1 run(s)" in out.output, out.output
    assert not (audio / path_component(old)).exists()
    assert (audio / path_component(new)).is_dir()  # inside the window
    assert (audio / path_component(cited_key["run_key"])).is_dir()  # an open alert cites it
    left = db.execute(
        "SELECT count(*) AS n FROM omni.clip_audio a JOIN omni.run r USING (run_id) "
        "WHERE r.run_key = %s AND a.audio_uri IS NOT NULL",
        (old,),
    ).fetchone()["n"]
    assert left == 0
    assert db.execute("SELECT count(*) AS n FROM omni.clip_audio").fetchone()["n"] == rows_before
