"""The fleet overview reads a maintained latest-per-series table (migration 0020): after every
night, a re-decided night and a deleted decision, `v_fleet_latest` says what the decisions on
record say, computed here from the raw rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from omni_tasks.series import Series
from tests.factories import D0, REGRESS, SAME, store_night

QWEN, MINICPM = "Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"


def _expected(db) -> dict[tuple[str, str, str, str, str], tuple[dt.date, str, int]]:
    """Per series and candidate: the newest night's verdict and the REGRESSED nights among the
    fleet's last 14, from every gate_decision row."""
    rows = db.execute(
        "SELECT benchmark, model, lane, candidate_branch, variant, nightly, verdict, decision_id "
        "FROM omni.gate_decision"
    ).fetchall()
    newest = max(r["nightly"] for r in rows)
    out: dict[tuple[str, str, str, str, str], tuple[dt.date, str, int]] = {}
    for r in sorted(rows, key=lambda r: (r["nightly"], r["decision_id"])):
        key = (r["benchmark"], r["model"], r["lane"], r["candidate_branch"], r["variant"])
        failing = sum(
            1
            for x in rows
            if (x["benchmark"], x["model"], x["lane"], x["candidate_branch"], x["variant"]) == key
            and x["verdict"] == "REGRESSED"
            and x["nightly"] > newest - dt.timedelta(days=14)
        )
        out[key] = (r["nightly"], r["verdict"], failing)
    return out


def _shown(db) -> dict[tuple[str, str, str, str, str], tuple[dt.date, str, int]]:
    rows = db.execute(
        "SELECT benchmark, model, lane, candidate_branch, variant, nightly, verdict, "
        "regressed_14d FROM omni.v_fleet_latest"
    ).fetchall()
    return {
        (r["benchmark"], r["model"], r["lane"], r["candidate_branch"], r["variant"]): (
            r["nightly"],
            r["verdict"],
            r["regressed_14d"],
        )
        for r in rows
    }


def test_the_overview_follows_every_decision(db, tmp_path: Path) -> None:
    qwen = Series("seed_tts_en", QWEN, "cuda-h100x2")
    minicpm = Series("seed_tts_en", MINICPM, "rocm-mi300")
    store_night(db, tmp_path, 0, SAME, series=qwen)
    store_night(db, tmp_path, 0, REGRESS, series=minicpm)
    store_night(db, tmp_path, 1, REGRESS, series=qwen)
    assert _shown(db) == _expected(db)
    assert len(_shown(db)) == 2
    # MiniCPM-o's night 0 stays its newest while Qwen moves on; Qwen's 14-night count is 1.
    assert _shown(db)[("seed_tts_en", QWEN, "cuda-h100x2", "rebase", "default")][1:] == (
        "REGRESSED",
        1,
    )

    # A decision changed in place (a re-decided night), then deleted by hand.
    db.execute(
        "UPDATE omni.gate_decision SET verdict = 'SAME' WHERE model = %s AND nightly = %s",
        (QWEN, D0 + dt.timedelta(days=1)),
    )
    db.commit()
    assert _shown(db) == _expected(db)
    assert _shown(db)[("seed_tts_en", QWEN, "cuda-h100x2", "rebase", "default")][1:] == ("SAME", 0)
    db.execute(
        "DELETE FROM omni.gate_decision WHERE model = %s AND nightly = %s",
        (QWEN, D0 + dt.timedelta(days=1)),
    )
    db.commit()
    assert _shown(db) == _expected(db)
    db.execute("DELETE FROM omni.gate_decision WHERE model = %s", (QWEN,))
    db.commit()
    assert _shown(db) == _expected(db)
    assert [k[1] for k in _shown(db)] == [MINICPM]  # no decision left, no row left
    db.execute("TRUNCATE omni.run CASCADE")  # fires no row trigger: the table is rebuilt
    db.commit()
    assert _shown(db) == {}


def test_the_overview_reads_no_history(db, tmp_path: Path) -> None:
    """The view is the table plus the fleet's last 14 nights of decisions: its plan touches no
    run (what made the panel grow with history) and only the maintained table besides."""
    store_night(db, tmp_path, 0, REGRESS)
    explained = db.execute("EXPLAIN (FORMAT JSON) SELECT * FROM omni.v_fleet_latest").fetchone()
    plan = explained["QUERY PLAN"]

    def relations(node: dict[str, Any]) -> set[str]:
        own = {node["Relation Name"]} if "Relation Name" in node else set()
        return own.union(*(relations(p) for p in node.get("Plans", [])))

    assert relations(plan[0]["Plan"]) == {"series_latest", "gate_decision"}


def _table(db) -> list[tuple[Any, ...]]:
    return [
        tuple(r.values())
        for r in db.execute("SELECT * FROM omni.series_latest ORDER BY 1, 2, 3, 4, 5").fetchall()
    ]


def _second_candidate(db) -> None:
    """Night 1's decision again, for another candidate branch."""
    db.execute(
        "CREATE TEMP TABLE other AS SELECT * FROM omni.gate_decision WHERE verdict = 'REGRESSED'"
    )
    db.execute(
        "UPDATE other SET decision_id = decision_id + 1000, candidate_branch = 'rebase-b', "
        "verdict = 'SAME'"
    )
    db.execute("INSERT INTO omni.gate_decision OVERRIDING SYSTEM VALUE SELECT * FROM other")


def test_a_decision_refreshes_its_branch_and_keeps_upstream(db, tmp_path: Path) -> None:
    """A decision updates only its own branch's row (migration 0021) and keeps the series'
    upstream columns; what is maintained that way equals the whole-series recompute of 0020
    (`rebuild_series_latest`) after every step."""
    qwen = Series("seed_tts_en", QWEN, "cuda-h100x2")
    store_night(db, tmp_path, 0, SAME, series=qwen)
    db.execute(
        "UPDATE omni.run SET source = source || %s::jsonb WHERE branch = 'main'",
        ('{"upstream_gates": [{"metric": "wer", "verdict": "fail"}]}',),
    )
    db.commit()
    steps = [
        lambda: store_night(db, tmp_path, 1, REGRESS, series=qwen),
        lambda: _second_candidate(db),
        lambda: db.execute("DELETE FROM omni.gate_decision WHERE candidate_branch = 'rebase'"),
    ]
    for step in steps:
        step()
        db.commit()
        maintained = _table(db)
        db.execute("SELECT omni.rebuild_series_latest()")
        assert _table(db) == maintained
        assert {r[10] for r in maintained} == {"fail"}  # upstream_verdict, on every row
    assert [r[4] for r in maintained] == ["rebase-b"]
