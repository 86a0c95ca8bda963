"""Operations on the results DB: `db migrate --plan` lists without applying, and `db backup` /
`db restore` round-trip a gated night (every table's rows, a run's statistics, the migration
records) into another database, with the audio root's manifest checked."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import subprocess
import uuid
from pathlib import Path

import psycopg
from typer.testing import CliRunner

from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.store.db import connect
from omni_tasks.store.migrate import migrate
from tests.conftest import scratch_database
from tests.factories import D0, seed_tts_corpus, simulated_night

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
        get_settings.cache_clear()
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
        get_settings.cache_clear()


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
    get_settings.cache_clear()
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
        get_settings.cache_clear()
        refused = runner.invoke(app, ["db", "restore", str(dump)])
        assert refused.exit_code == 1 and "--yes" in refused.output
        (audio / "run-a" / "u1.wav").unlink()  # the audio root lost a file since
        out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
        assert out.exit_code == 0, out.output
        assert "restored 2 run(s)" in out.output and "0 of 1 file(s) in place" in out.output
        assert _snapshot(target_dsn) == before
        plan = runner.invoke(app, ["db", "migrate", "--plan"])
        assert "schema is up to date" in plan.output  # the migration records came along
        with connect(target_dsn) as conn:
            code = conn.execute(
                "SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'omni'::regnamespace)"
                " AS functions, (SELECT count(*) FROM pg_trigger t JOIN pg_class c"
                " ON c.oid = t.tgrelid WHERE c.relnamespace = 'omni'::regnamespace"
                " AND NOT t.tgisinternal) AS triggers, (SELECT count(*) FROM pg_views"
                " WHERE schemaname = 'omni') AS views, has_table_privilege("
                "'omni_reader', 'omni.v_fleet_latest', 'SELECT') AS reader,"
                " (SELECT count(*) FROM pg_class WHERE relnamespace = 'omni'::regnamespace"
                " AND relowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user))"
                " AS foreign_owned"
            ).fetchone()
        # The migrations' functions, triggers and views, the dashboards' grants, and every
        # object owned by the restoring user (not the restore's temporary role, now gone).
        assert code == {
            "functions": 6,
            "triggers": 6,
            "views": 18,  # 0024 added omni.v_ledger_chronic
            "reader": True,
            "foreign_owned": 0,
        }, code
        assert "omni_restore_" in out.output and _restore_leftovers(out.output) == []
        get_settings.cache_clear()


def test_audio_prune_keeps_recent_nights_and_what_an_open_alert_cites(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from omni_tasks.trust.names import path_component
    from tests.factories import store_night

    audio = tmp_path / "audio"
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(audio))
    get_settings.cache_clear()
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


# ---------------------------------------------------------------- restore: a bad backup
def _live_state(dsn: str) -> tuple[int, list[str]]:
    """The results schema's table count (views included) and its sentinel events."""
    with connect(dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'omni'"
        ).fetchone()["n"]
        sentinel = [r["text"] for r in conn.execute("SELECT text FROM omni.event ORDER BY 1")]
    return tables, sentinel


def _with_sentinel(db) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    db.execute(
        "INSERT INTO omni.event (time, kind, text) VALUES (now(), 'config_change', 'sentinel')"
    )
    db.commit()
    before = _live_state(db.info.dsn)
    assert before[0] > 40 and before[1] == ["sentinel"]
    return before


def _restore_leftovers(output: str) -> list[str]:
    """The roles and scratch databases of the restore that printed `output` still there."""
    from tests.conftest import ADMIN_DSN

    tags = sorted(set(re.findall(r"omni_restore_[0-9a-f]{10}", output)))
    with psycopg.connect(ADMIN_DSN) as admin:
        return [
            r[0]
            for tag in tags
            for r in admin.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %(p)s UNION ALL "
                "SELECT datname FROM pg_database WHERE datname LIKE %(p)s",
                {"p": tag + "%"},
            ).fetchall()
        ]


def _backup_of_live(tmp_path: Path) -> Path:
    dump = tmp_path / "backups" / "omni.dump"
    out = runner.invoke(app, ["db", "backup", str(dump)])
    assert out.exit_code == 0, out.output
    return dump


def test_restore_of_a_truncated_dump_leaves_the_live_schema_untouched(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path / "audio"))
    get_settings.cache_clear()
    simulated_night(
        db, seed_tts_corpus(tmp_path / "en", 60), dt.date(2026, 11, 20), "simulator:rebase"
    )
    before = _with_sentinel(db)
    dump = _backup_of_live(tmp_path)
    whole = dump.read_bytes()
    dump.write_bytes(whole[: len(whole) * 2 // 3])
    out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
    assert out.exit_code == 1, out.output
    assert _live_state(db.info.dsn) == before
    assert "not a readable pg_dump archive" in out.output, out.output
    assert "nothing was restored" in out.output
    # Its table of contents whole, a table's data cut short: the scratch restore fails.
    dump.write_bytes(whole[: len(whole) - 200] + bytes(200))
    out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
    assert out.exit_code == 1, out.output
    assert "pg_restore failed" in out.output and "nothing was restored" in out.output, out.output
    assert _live_state(db.info.dsn) == before
    assert "omni_restore_" in out.output and _restore_leftovers(out.output) == []


def test_restore_of_random_bytes_with_a_plausible_manifest_is_refused(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path / "audio"))
    get_settings.cache_clear()
    before = _with_sentinel(db)
    manifest = _backup_of_live(tmp_path).with_name("omni.dump.manifest.json")
    bogus = tmp_path / "bogus.dump"
    bogus.write_bytes(random.Random(64).randbytes(5000))
    bogus.with_name("bogus.dump.manifest.json").write_text(manifest.read_text())
    out = runner.invoke(app, ["db", "restore", str(bogus), "--yes"])
    assert out.exit_code == 1, out.output
    assert _live_state(db.info.dsn) == before
    assert "is not a readable pg_dump archive" in out.output, out.output


def test_restore_refuses_a_function_backed_materialized_view_and_runs_none_of_it(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The planted function writes a file through the server (superuser only) and a row into
    the results schema, both only when run outside the database it was made in."""
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path / "audio"))
    live_dsn = db.info.dsn
    before = _with_sentinel(db)
    marker = f"/tmp/omni-restore-marker-{uuid.uuid4().hex}"
    with scratch_database("omni_hostile") as source:
        with connect(source) as conn:
            migrate(conn)
            conn.execute(
                f"""
                CREATE FUNCTION omni.leak() RETURNS int LANGUAGE plpgsql AS $$
                BEGIN
                    IF current_database() <> '{psycopg.conninfo.conninfo_to_dict(source)["dbname"]}'
                    THEN
                        INSERT INTO omni.event (time, kind, text)
                        VALUES (now(), 'config_change', 'marker');
                        COPY (SELECT 'ran') TO '{marker}';
                    END IF;
                    RETURN 1;
                END $$;
                CREATE MATERIALIZED VIEW omni.leaky AS SELECT omni.leak() AS x;
                """
            )
            conn.commit()
        monkeypatch.setenv("OMNI_DATABASE_URL", source)
        get_settings.cache_clear()
        dump = _backup_of_live(tmp_path)
    monkeypatch.setenv("OMNI_DATABASE_URL", live_dsn)
    get_settings.cache_clear()
    out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
    assert out.exit_code == 1, out.output
    assert "FUNCTION omni leak()" in out.output and "MATERIALIZED VIEW" in out.output, out.output
    assert "nothing was restored" in out.output
    with connect(live_dsn) as conn:
        ran = conn.execute("SELECT pg_stat_file(%s, true) AS f", (marker,)).fetchone()["f"]
    assert ran is None  # the function never ran…
    assert _live_state(live_dsn) == before  # …and the live schema is as it was
    assert "omni_restore_" in out.output and _restore_leftovers(out.output) == []


def test_restore_refuses_objects_the_migrations_do_not_make(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Kinds the allow-list admits (a table, a column default) still have to be the
    migrations' own, and nothing outside the results schema comes in."""
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(tmp_path / "audio"))
    live_dsn = db.info.dsn
    before = _with_sentinel(db)
    with scratch_database("omni_extra") as source:
        with connect(source) as conn:
            migrate(conn)
            conn.execute("CREATE TABLE omni.extra (x int DEFAULT pg_backend_pid())")
            conn.execute("CREATE TABLE public.elsewhere (x int)")
            conn.commit()
        monkeypatch.setenv("OMNI_DATABASE_URL", source)
        get_settings.cache_clear()
        dump = _backup_of_live(tmp_path)
        other = tmp_path / "other.dump"
        from omni_tasks.store.backup import PG_BIN

        subprocess.run(
            [str(PG_BIN / "pg_dump"), "--format=custom", "--schema=omni", "--schema=public",
             "--no-owner", "--no-privileges", f"--file={other}", f"--dbname={source}"],
            check=True,
        )  # fmt: skip
        other.with_name("other.dump.manifest.json").write_text(
            dump.with_name("omni.dump.manifest.json").read_text()
        )
    monkeypatch.setenv("OMNI_DATABASE_URL", live_dsn)
    get_settings.cache_clear()
    out = runner.invoke(app, ["db", "restore", str(dump), "--yes"])
    assert out.exit_code == 1, out.output
    assert "unexpected relation omni.extra" in out.output, out.output
    assert "omni_restore_" in out.output and _restore_leftovers(out.output) == []
    out = runner.invoke(app, ["db", "restore", str(other), "--yes"])
    assert out.exit_code == 1, out.output
    assert "TABLE public elsewhere" in out.output, out.output
    assert _live_state(live_dsn) == before


def test_audio_prune_protects_cited_runs_by_id_not_by_substring(
    db, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """An open alert cites a run by a detail holding its key (here a key with a quote in it,
    which the alert's JSON text escapes) or through the decision that opened it (its
    candidate and baseline runs): neither loses its audio; an uncited old run does."""
    from omni_tasks.trust.names import path_component
    from tests.factories import SAME, store_night

    audio = tmp_path / "audio"
    monkeypatch.setenv("OMNI_AUDIO_ROOT", str(audio))
    get_settings.cache_clear()
    quoted_night = store_night(db, tmp_path, 0, None)
    db.execute(
        "UPDATE omni.run SET run_key = 'main \"quoted\" \\ ' || run_key WHERE nightly = %s",
        (quoted_night,),
    )
    decided = store_night(db, tmp_path, 1, SAME)
    store_night(db, tmp_path, 2, None)
    runs = {r["run_key"]: r["nightly"] for r in db.execute("SELECT run_key, nightly FROM omni.run")}
    quoted = next(k for k in runs if '"' in k)
    decision = db.execute(
        "SELECT decision_id FROM omni.gate_decision WHERE nightly = %s "
        "AND candidate_run_id IS NOT NULL",
        (decided,),
    ).fetchone()["decision_id"]
    for key, details in [("k1", {"candidate_run": quoted}), ("k2", {"decision_id": decision})]:
        db.execute(
            "INSERT INTO omni.alert (alert_key, kind, state, opened_nightly, last_nightly, "
            "details) VALUES (%s, 'regression', 'open', %s, %s, %s)",
            (key, decided, decided, json.dumps(details)),
        )
    for key in runs:
        folder = audio / path_component(key)
        folder.mkdir(parents=True)
        (folder / "u.wav").write_bytes(b"RIFF" + bytes(100))
        db.execute(
            "UPDATE omni.clip_audio a SET audio_uri = %s || '/u.wav' "
            "FROM omni.run r WHERE r.run_id = a.run_id AND r.run_key = %s",
            (str(folder), key),
        )
    db.commit()
    out = runner.invoke(app, ["audio", "prune", "--older-than", "7"])
    assert out.exit_code == 0, out.output
    kept = sorted(k for k in runs if (audio / path_component(k)).is_dir())
    removed = sorted(set(runs) - set(kept))
    assert [runs[k] for k in removed] == [D0 + dt.timedelta(days=2)], out.output
    assert quoted in kept and [runs[k] for k in kept].count(decided) == 2
