"""Dashboards as code: committed JSON = generated; every panel's SQL runs on real data; the
Grafana push is idempotent; events are annotated once."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import psycopg
import pytest

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.config import get_settings
from omni_tasks.grafana.dashboards import DASHBOARD_DIR, dashboards, render, trend_dashboard
from omni_tasks.grafana.push import refresh
from omni_tasks.store.runs import save_run
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.factories import D0, REGRESS, SAME, store_night
from tests.fakes.grafana_api import GrafanaState, expand, grafana_app, panel_queries

STANDING = "Standing failures"  # the ledger's panels, run on a planted history elsewhere


def test_committed_dashboards_are_what_the_code_generates() -> None:
    for name, d in dashboards().items():
        assert (DASHBOARD_DIR / name).read_text(encoding="utf-8") == render(d), (
            f"{name} is stale: run `omni-tasks dashboards build`"
        )
    uids = [d["uid"] for d in dashboards().values()]
    assert uids == ["omni-seed-tts-trend"]


@pytest.fixture
def history(db, tmp_path: Path):
    from omni_tasks.deployment.schema import NightlyParams
    from omni_tasks.gates.policy import load_policy
    from omni_tasks.jobs.gate_advice import record_night

    for i, shape in enumerate([SAME, REGRESS, REGRESS, SAME]):
        last = store_night(db, tmp_path, i, shape)
    # The nightly's gate advice: upstream's mean-WER gate on main's four nights.
    assert record_night(db, NightlyParams(benchmark="seed_tts_en"), last, load_policy()) == 1
    db.commit()
    return db


def _run(db: psycopg.Connection, sql: str) -> tuple[list[str], list[tuple]]:
    cur = db.execute(sql)
    return [c.name for c in cur.description or []], cur.fetchall()


def _variables(db: psycopg.Connection) -> dict[str, str | list[str]]:
    """The dashboard's variables as a reader sets them on the history: both branches, the
    latest comparison of rebase."""
    comparison = db.execute(
        "SELECT comparison_id FROM omni.v_latest_paired WHERE candidate_branch = 'rebase'"
    ).fetchone()["comparison_id"]
    return {
        "benchmark": "seed_tts_en",
        "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "lane": "default",
        "branch": ["main", "rebase"],
        "variant": ["default"],
        "tau": "0.5",
        "comparison": str(comparison),
    }


def test_every_panel_query_runs_and_returns_its_columns(history, tmp_path_factory) -> None:
    variables = _variables(history)
    expected = {
        "Tail fraction (share of broken items: WER > τ, or a wrong answer)/A": [
            "time",
            "metric",
            "tail_fraction",
        ],
        "Tail fraction (share of broken items: WER > τ, or a wrong answer)/B": [
            "time",
            "metric",
            "tail_ci_low",
        ],
        "Capped mean WER (and the legacy uncapped mean)/B": ["time", "metric", "mean_wer"],
        "Failure modes of broken clips/A": ["time", "metric", "clips"],
        "Origin of broken clips/A": ["time", "metric", "clips"],
        "Questions vs statements/A": ["time", "metric", "tail_fraction"],
        "Verdict history/A": [
            "time",
            "candidate_branch",
            "baseline_branch",
            "variant",
            "verdict",
            "confirmed",
            "mcnemar_p_holm",
            "delta_tail_fraction",
            "regressed",
            "improved",
        ],
        "Regressed clips of comparison $comparison/A": [
            "utt_id",
            "reference",
            "baseline_heard",
            "baseline_wer",
            "candidate_heard",
            "candidate_wer",
            "candidate_status",
            "audio",
            "thinker_text",
        ],
        "annotation omni events": ["time", "text", "tags"],
        "variable branch": ["branch"],
        "Fleet overview: every series' latest verdict, ours and upstream's/A": [
            "benchmark",
            "model",
            "lane",
            "candidate_branch",
            "variant",
            "nightly",
            "verdict",
            "regressed_14d",
            "upstream_verdict",
            "upstream_nightly",
            "upstream_failing_14d",
            "upstream_fail_streak",
            "validity",
        ],
        "Upstream gate advice (its chance of failing a night with nothing changed)/A": [
            "gate",
            "p_fail",
            "p_fail_low",
            "p_fail_high",
            "suggested",
            "nights",
            "nightly",
        ],
    }
    queries = panel_queries(trend_dashboard())
    assert set(expected) <= set(queries)
    from_, to = f"{D0}T00:00:00Z", "2026-12-31T00:00:00Z"
    published = "Accuracy and secondary scores (never gated)/D"
    summaries = "Summary-only figures (judge means and summaries without items; never gated)/A"
    for name, raw in queries.items():
        if name.startswith(STANDING):  # 4 nights make no chronic item: test_ledger_digest.py
            continue
        columns, rows = _run(history, expand(raw, variables, from_, to))
        if name == published:  # seed-TTS's published WERs are another protocol: no line
            assert rows == [], rows
            continue
        if name == summaries:  # the history has per-item runs only
            assert columns == ["time", "metric", "value"] and rows == []
            continue
        assert rows, f"{name} returned no rows"
        if name in expected:
            assert columns == expected[name], name
    # MiniCPM-o's Video-MME figure shares the nightly's protocol: a labelled line at 0.704.
    same = {**variables, "benchmark": "videomme", "model": "openbmb/MiniCPM-o-4_5"}
    columns, line = _run(history, expand(queries[published], same, from_, to))
    assert columns == ["time", "metric", "value"] and len(line) == 61  # a point a day
    assert {(r["metric"], r["value"]) for r in line} == {
        (
            "published 70.4 % accuracy (MiniCPM-o 4.5 model card; the upstream gate's 0.68 is "
            "set against it)",
            0.704,
        )
    }
    # A DuplexEval night: its judge means, each a line named with its protocol pin.
    doc = {
        "protocol_pin": PROTOCOL_PIN,
        "samples": 66,
        "rtd": {"mean_content_score": 1.2, "by_task": {"RTD_OCR": {"mean_content_score": 1}}},
        "pr": {"mean_all_success": 0.25},
    }
    path = tmp_path_factory.mktemp("duplex") / "summary.json"
    path.write_text(json.dumps(doc))
    parsed = benchmarks.import_artifact(
        path, ImportOptions(branch="main", built=dt.date(2026, 11, 5))
    )
    save_run(history, parsed.spec, [], None)
    history.commit()
    duplex = {**variables, "benchmark": "duplex_eval", "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct"}
    _, lines = _run(history, expand(queries[summaries], duplex, from_, to))
    assert {(r["metric"], r["value"]) for r in lines} == {
        ("main rtd.mean_content_score @ca3c122", 1.2),
        ("main pr.mean_all_success @ca3c122", 0.25),
    }
    # Spot-check content: four nights per branch; the regressed clips of the last A/B.
    _, trend = _run(
        history,
        expand(
            queries["Tail fraction (share of broken items: WER > τ, or a wrong answer)/A"],
            variables,
            from_,
            to,
        ),
    )
    assert len(trend) == 8
    _, clips = _run(
        history,
        expand(queries["Regressed clips of comparison $comparison/A"], variables, from_, to),
    )
    assert len(clips) == 4  # night 3 is SAME: 4 regressed clips
    history.execute(
        "UPDATE omni.clip_audio SET audio_uri = '/var/lib/omni-tasks/audio/' || "
        "'seed_tts_en_run/00001_' || utt_id || '.wav'"
    )
    _, clips = _run(
        history,
        expand(queries["Regressed clips of comparison $comparison/A"], variables, from_, to),
    )
    # The evidence app's path (RUN/FILE), never the worker's filesystem path.
    assert all(c["audio"].startswith("seed_tts_en_run/00001_") for c in clips)
    _, verdicts = _run(history, expand(queries["Verdict history/A"], variables, from_, to))
    assert [v["verdict"] for v in verdicts] == ["SAME", "REGRESSED", "REGRESSED", "SAME"]


def test_the_dashboard_role_reads_views_and_can_only_select(history) -> None:
    history.execute("SET ROLE omni_reader")
    try:
        assert history.execute("SELECT count(*) AS n FROM omni.v_nightly_trend").fetchone()["n"] > 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            history.execute("DELETE FROM omni.run")
    finally:
        history.rollback()
        history.execute("RESET ROLE")


def test_push_is_idempotent_and_annotates_each_event_once(history, monkeypatch) -> None:
    state = GrafanaState()
    with serve_in_thread(grafana_app(state)) as url:
        monkeypatch.setenv("OMNI_GRAFANA_URL", url)
        monkeypatch.setenv("OMNI_GRAFANA_TOKEN", "glsa_planted_secret")
        get_settings.cache_clear()
        first = refresh(history)
        second = refresh(history)
    assert (first.dashboards_written, first.annotations_created) == (1, 1)  # regression_opened
    assert (second.dashboards_written, second.dashboards_unchanged) == (0, 1)
    assert second.annotations_created == 0 and state.writes == 1
    assert state.annotations[0]["dashboardUID"] == "omni-seed-tts-trend"
    assert "regression_opened" in state.annotations[0]["tags"]
    assert state.auth == {"Bearer glsa_planted_secret"}
    annotated = history.execute("SELECT grafana_annotation_id FROM omni.event").fetchall()
    assert [a["grafana_annotation_id"] for a in annotated] == [1]


def test_refresh_without_grafana_only_logs(history, monkeypatch) -> None:
    monkeypatch.delenv("OMNI_GRAFANA_URL", raising=False)
    get_settings.cache_clear()
    report = refresh(history)
    assert not report.configured and "not configured" in report.summary


def _grafana(monkeypatch, url: str, mode: str | None = None, token: str = "glsa_t") -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMNI_GRAFANA_URL", url)
    monkeypatch.setenv("OMNI_GRAFANA_TOKEN", token)
    if mode:
        monkeypatch.setenv("OMNI_GRAFANA_DASHBOARDS", mode)
    get_settings.cache_clear()


def test_one_mode_per_install_never_both_on_one_uid(history, monkeypatch) -> None:
    """Grafana refuses an API save of a file-provisioned dashboard (the fake enforces it): the
    api mode says what to fix; the compose (provisioned) mode pushes annotations only."""
    from omni_tasks.grafana.push import FOLDER_UID, GrafanaError

    provisioned = trend_dashboard()
    state = GrafanaState(
        dashboards={provisioned["uid"]: provisioned}, provisioned={provisioned["uid"]}
    )
    with serve_in_thread(grafana_app(state)) as url:
        _grafana(monkeypatch, url)
        with pytest.raises(GrafanaError, match=r"file-provisioned.*OMNI_GRAFANA_DASHBOARDS"):
            refresh(history)
        _grafana(monkeypatch, url, "provisioned")
        report = refresh(history)
    assert (report.dashboards_written, report.annotations_created) == (0, 1)
    assert state.writes == 0 and len(state.annotations) == 1
    fresh = GrafanaState()
    with serve_in_thread(grafana_app(fresh)) as url:
        _grafana(monkeypatch, url, "api")
        assert refresh(history).dashboards_written == 1
    assert FOLDER_UID in fresh.folders and FOLDER_UID != "omni-tasks"
    get_settings.cache_clear()


def test_a_refused_grafana_token_is_a_clear_error(history, monkeypatch) -> None:
    from omni_tasks.grafana.push import GrafanaError

    state = GrafanaState(token="glsa_right")
    with serve_in_thread(grafana_app(state)) as url:
        _grafana(monkeypatch, url, token="glsa_wrong")
        with pytest.raises(
            GrafanaError, match=r"refused the token \(401\): check OMNI_GRAFANA_TOKEN"
        ):
            refresh(history)
    assert (
        history.execute(
            "SELECT count(*) AS n FROM omni.event WHERE grafana_annotation_id IS NULL"
        ).fetchone()["n"]
        >= 1
    )
    get_settings.cache_clear()


def test_every_override_matches_a_series_the_queries_produce(history) -> None:
    """An override whose matcher names nothing silently does nothing (the interval band's
    regex stopped matching after a rename, and each branch drew three solid lines)."""
    import re

    variables = _variables(history)
    from_, to = f"{D0}T00:00:00Z", "2026-12-31T00:00:00Z"
    checked = 0
    for panel in trend_dashboard()["panels"]:
        overrides = (panel.get("fieldConfig") or {}).get("overrides") or []
        if not overrides:
            continue
        names: set[str] = set()  # what Grafana names fields: metric values and columns
        for target in panel["targets"]:
            columns, rows = _run(history, expand(target["rawSql"], variables, from_, to))
            names |= set(columns) | {str(r["metric"]) for r in rows if "metric" in r}
        for o in overrides:
            kind, pattern = o["matcher"]["id"], o["matcher"]["options"]
            hit = (
                any(re.search(pattern, n) for n in names)
                if kind == "byRegexp"
                else pattern in names
            )
            assert hit, f"{panel['title']}: {kind} {pattern!r} matches none of {sorted(names)}"
            checked += 1
    assert checked >= 3


def test_the_json_imports_into_any_grafana_and_links_to_the_evidence() -> None:
    """Panels read a `datasource` variable whose default is the provisioned datasource's uid
    (a UI import elsewhere asks for one); the dashboard links the report index and Airflow."""
    import yaml

    d = trend_dashboard()
    provisioning = yaml.safe_load(
        (DASHBOARD_DIR / "provisioning/datasources/omni-results.yaml").read_text()
    )
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["current"]["value"] == provisioning["datasources"][0]["uid"]
    sources = [p["datasource"]["uid"] for p in d["panels"]]
    sources += [v["datasource"]["uid"] for v in d["templating"]["list"] if "datasource" in v]
    sources += [a["datasource"]["uid"] for a in d["annotations"]["list"]]
    assert set(sources) == {"${datasource}"}
    assert {link["url"] for link in d["links"]} == {
        "${evidence}/omni/",
        "${evidence}/dags/omni_nightly",
    }
