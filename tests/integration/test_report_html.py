"""The HTML report renders in headless Chromium: plots, audio players, no console errors."""

from __future__ import annotations

import datetime as dt
import html
import os
import re
import shutil
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from bench.artifacts import ABShape
from omni_tasks.cli import app
from omni_tasks.config import get_settings
from omni_tasks.evidence.audio import write_audio
from tests.chromium import screenshot
from tests.factories import REGRESS, SAME, store_night
from tests.fakes.buildkite_fleet import fleet_api, sync


def x_ticks(dom: str, div_id: str) -> list[str]:
    """The x-axis tick labels Chromium drew in the chart `div_id`."""
    chart = dom.split(f'id="{div_id}"')[1].split('class="plotly-graph-div"')[0]
    axis = chart.split('class="xaxislayer-above"')[1].split("</g></g>")[0]
    return re.findall(r"<text[^>]*>([^<]+)</text>", axis)


def test_report_renders_plots_and_audio_without_console_errors(db, tmp_path: Path) -> None:
    for i, shape in enumerate([SAME, REGRESS]):
        store_night(db, tmp_path, i, shape)
    regressed = db.execute(
        "SELECT r.run_id, c.utt_id FROM omni.v_regressed_clips c JOIN omni.run r "
        "ON r.branch = c.candidate_branch AND r.nightly = c.nightly "
        "WHERE c.nightly = '2026-11-02' AND c.candidate_branch = 'rebase' "
        "ORDER BY c.candidate_wer DESC NULLS FIRST, c.utt_id LIMIT 3"
    ).fetchall()
    (base,) = db.execute(
        "SELECT run_id FROM omni.run WHERE branch = 'main' AND nightly = '2026-11-02'"
    ).fetchall()
    for r in regressed:  # three regressed clips with audio on record, on both sides
        for side, run_id in (("rebase", r["run_id"]), ("main", base["run_id"])):
            uri = tmp_path / "omni-home" / "audio" / side / f"{r['utt_id']}.wav"
            write_audio(str(uri), 0.1 * np.sin(np.arange(48_000, dtype=np.float32)), 24_000)
            db.execute(
                "UPDATE omni.clip_audio SET audio_uri = %s WHERE run_id = %s AND utt_id = %s",
                (str(uri), run_id, r["utt_id"]),
            )
    db.commit()
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--nightly", "2026-11-02"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    # Both sides of each regressed clip, side by side, as Ogg Opus (a 2 s clip: 96 KB of WAV).
    players = re.findall(r'src="data:audio/ogg;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(players) == 6 and all(len(p) < 20_000 for p in players)
    assert "baseline audio</th><th>candidate audio" in page and "REGRESSED" in page
    assert page.index("Regressed clips") < page.index("Harness figures")  # the clips first
    assert "SIMULATED" in page  # the synthetic artifacts say so, and so does the report

    shot = tmp_path / "report.png"
    run = screenshot(out, shot)
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    dom = run.stdout
    assert len(re.findall(r'class="main-svg"', dom)) >= 3  # plotly drew trend, modes, scatter
    assert x_ticks(dom, "trend") == ["2026-11-01", "2026-11-02"]  # whole days, no hours
    assert dom.count("<audio") == 6
    assert shot.is_file() and shot.stat().st_size > 20_000


def test_a_100_clip_report_is_lean_and_loads_plotly_from_beside_it(db, tmp_path: Path) -> None:
    """One stored night of 100 clips, no audio: the page is at most 1 MB because plotly's
    script is one shared `plotly.min.js` beside the reports (written once, not per page); the
    page still draws its charts from it, the night's trend reads as its one date, and the
    failure-mode bars put the baseline first."""
    store_night(db, tmp_path, 0, ABShape(n=100, stable_broken=8, regressed=7, improved=1))
    reports = tmp_path / "reports"
    out = reports / "seed_tts_en_2026-11-01.html"
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--nightly", "2026-11-01"])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size <= 1_000_000, out.stat().st_size
    assert '<script src="plotly.min.js"></script>' in out.read_text()
    shared = reports / "plotly.min.js"
    assert shared.stat().st_size > 3_000_000  # plotly's full bundle, once for the folder
    written = shared.stat().st_mtime_ns
    again = reports / "seed_tts_en_2026-11-01-again.html"
    assert CliRunner().invoke(app, ["report", "--out", str(again)]).exit_code == 0
    assert shared.stat().st_mtime_ns == written and sorted(p.name for p in reports.iterdir()) == [
        "plotly.min.js",
        "seed_tts_en_2026-11-01-again.html",
        "seed_tts_en_2026-11-01.html",
    ]
    # Without --out the page goes where the nightly writes it: the home's reports folder (the
    # command an alert's Next line prints has no --out).
    home_reports = tmp_path / "omni-home" / "reports"
    result = CliRunner().invoke(app, ["report", "--nightly", "2026-11-01"])
    assert result.exit_code == 0, result.output
    (page_at,) = home_reports.glob("*2026-11-01.html")
    said = "".join(result.output.splitlines())  # the console folds long lines
    assert f"wrote {page_at} " in said and page_at.stat().st_size <= 1_000_000

    run = screenshot(out, tmp_path / "lean.png")
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    dom = run.stdout
    assert len(re.findall(r'class="main-svg"', dom)) >= 3  # trend, modes, scatter drawn
    assert x_ticks(dom, "trend") == ["2026-11-01"]  # one night: one date, not hours around it
    assert x_ticks(dom, "modes")[0].startswith("main / ")  # the baseline's bars first


def test_a_secret_the_worker_holds_never_reaches_the_page(db, tmp_path: Path, monkeypatch) -> None:
    """A server that echoes a secret into what was heard: the regressed clips' table shows the
    transcript with the secret the worker holds replaced, every value through the one gate."""
    held = "held-but-not-a-known-shape-9876"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", held)
    get_settings.cache_clear()
    store_night(db, tmp_path, 0, ABShape(n=40, stable_broken=2, regressed=6, improved=1))
    db.execute(
        "UPDATE omni.clip_grade SET hypothesis = %s WHERE wer > 0.5", (f"it said {held} aloud",)
    )
    db.commit()
    out = tmp_path / "secret.html"
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--nightly", "2026-11-01"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert held not in page and "it said [redacted] aloud" in page


def test_report_without_decisions_is_a_clear_error(db, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and "no gated nightly" in result.output


def test_a_night_with_a_failed_run_still_gets_its_report(db, tmp_path: Path) -> None:
    """main benchmarked, rebase against a dead target (every request failed, so no figures):
    the report is written and names the failed run (it used to end in a TypeError)."""
    runner = CliRunner()
    night = ["--nightly", "2026-11-30", "--limit", "5"]
    ok = ["bench", "--target", "simulator:main", "--branch", "main", "--transcript-mode"]
    assert runner.invoke(app, [*ok, *night]).exit_code == 0
    dead = runner.invoke(
        app, ["bench", "--target", "http://127.0.0.1:1", "--branch", "rebase", *night]
    )
    assert dead.exit_code != 0 and "failed" in dead.output
    assert runner.invoke(app, ["gate", "--nightly", "2026-11-30"]).exit_code == 0
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", "--out", str(out), "--nightly", "2026-11-30"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    (reason,) = db.execute("SELECT reasons FROM omni.gate_decision").fetchone()["reasons"][:1]
    assert "rebase" in page and html.escape(reason) in page  # the failed side says why
    run = screenshot(out, tmp_path / "partial.png")
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    assert (tmp_path / "partial.png").stat().st_size > 20_000 and "main-svg" in run.stdout


def test_the_evidence_index_renders(tmp_path: Path) -> None:
    from omni_tasks.evidence.serving import index_page

    reports = tmp_path / "reports"
    reports.mkdir()
    for name in (
        "seed_tts_en_2026-11-29.html",
        "seed_tts_en_2026-11-30.html",
        "daily_omni_2026-11-30.html",
    ):
        (reports / name).write_text("<html></html>")
    page = tmp_path / "index.html"
    page.write_text(index_page(reports))
    run = screenshot(page, tmp_path / "index.png")
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    assert (tmp_path / "index.png").stat().st_size > 5_000
    rows = re.findall(r"<tr><td>(\d{4}-\d\d-\d\d)</td>", run.stdout)
    assert rows == ["2026-11-30", "2026-11-29"]  # newest night first, both benchmarks on one row
    assert 'href="reports/daily_omni_2026-11-30.html"' in run.stdout


def test_the_reports_fleet_section_shows_every_series_ours_and_upstreams(
    db, tmp_path: Path
) -> None:
    """Two gated nights of the default series plus the three pipelines' Buildkite history:
    the report's Fleet section has a row per series with upstream's verdict coloured, its
    record, and why a night was not valid; headless Chromium renders it (the screenshot is
    the one README quotes)."""
    for i, shape in enumerate([SAME, REGRESS]):
        store_night(db, tmp_path, i, shape)
    with fleet_api() as url:
        for pipeline in ("vllm-omni", "vllm-omni-amd", "vllm-omni-npu-ci"):
            sync(db, url, pipeline)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--nightly", "2026-11-02"])
    assert result.exit_code == 0, result.output
    shot = tmp_path / "fleet.png"
    run = screenshot(out, shot, "1280,900")
    assert [line for line in run.stderr.splitlines() if ":CONSOLE" in line] == []
    section = run.stdout.split('<h2 id="fleet">Fleet</h2>')[1].split("</table>")[0]
    rows = re.findall(r"<tr(?: class=\"here\")?><td>([^<]+)</td>", section)
    # By benchmark, model (byte order), lane, candidate, protocol; the MiniCPM-o native-duplex
    # zh night has no upstream gate (#7413's is on the English split), so no row.
    assert rows == [
        "daily_omni · Qwen3-Omni-30B-A3B-Instruct · cuda-h100x2",
        "daily_omni · Qwen3-Omni-30B-A3B-Instruct · rocm-mi300",
        "daily_omni · MiniCPM-o-4_5 · cuda-h100",
        "duplex_eval · MiniCPM-o-4_5 · cuda-h100x2",
        "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · cuda-h100x2",
        "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · default",
        "seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · rocm-mi300",
        "seed_tts_zh · MiniCPM-o-4_5 · cuda-h100",
        "seed_tts_zh · MiniCPM-o-4_5 · npu-a3",
        "videomme · MiniCPM-o-4_5 · cuda-h100",
    ]
    # The hardware each ran on and whether upstream's step blocks (AMD's does not).
    assert section.count("<td>non-blocking</td>") == 2 and "<td>MI300</td>" in section
    assert '<tr class="here"><td>seed_tts_en · Qwen3-Omni-30B-A3B-Instruct · default' in section
    assert '<td class="REGRESSED">REGRESSED</td>' in section
    # Qwen's Daily-Omni 0.6 < 0.685 (CUDA) and 0.58 (AMD); DuplexEval's newest night fails the
    # guard's pin assertion.
    assert section.count('<td class="fail">fail</td>') == 3
    assert '<td class="not-evaluated">not evaluated</td>' in section
    assert "short night: 63 of the suite's 66 items evaluated" in html.unescape(section)
    assert shot.is_file() and shot.stat().st_size > 20_000
    keep = os.environ.get("OMNI_KEEP_SCREENSHOT")  # bench/results/report_fleet.png, by hand
    if keep:
        shutil.copy(shot, keep)


def test_a_published_figure_of_the_same_protocol_is_drawn_as_a_labelled_line(
    db, tmp_path: Path
) -> None:
    """Three nights of MiniCPM-o Video-MME from Buildkite: the report's chart draws the
    series' accuracy per night with the model card's 70.4 as a labelled line (the nightly
    follows the card's protocol); Qwen3-Omni's seed-TTS gets no such chart (another protocol)."""
    from omni_tasks.reports.html import nightly_report
    from omni_tasks.series import Series
    from omni_tasks.synthesis.simulator import serve_in_thread
    from tests.fakes.buildkite_api import BuildkiteState, buildkite_app
    from tests.fakes.buildkite_fleet import MINICPM, MINICPM_DIR, add

    VIDEOMME = f"{MINICPM_DIR}/omni_acc_videomme_20261128-021500.json"

    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state)) as url:
        for night, right in ((26, 14), (27, 15), (28, 13)):
            items = [
                {
                    "request_id": str(k),
                    "question_id": f"q{k:02d}",
                    "gold": "A",
                    "predicted": "A" if k < right else "B",
                    "correct": k < right,
                }
                for k in range(20)
            ]
            doc = {
                "date": f"202611{night}-020000",
                "videomme_accuracy": right / 20,
                "videomme_eval_items": items,
            }
            add(state, url, "vllm-omni", night, {VIDEOMME: doc})
        sync(db, url, "vllm-omni")
    page = nightly_report(db, Series("videomme", MINICPM, "cuda-h100"), dt.date(2026, 11, 28), 0.5)
    chart = page.split('id="published"')[1].split("</script>")[0]
    assert "published 70.4 % accuracy" in chart and '"y0":0.704' in chart.replace(" ", "")
    assert "0.7" in chart and "0.65" in chart and "0.75" in chart  # the three nights' figures
    qwen = nightly_report(
        db, Series("seed_tts_en", "Qwen/Qwen3-Omni-30B-A3B-Instruct"), dt.date(2026, 11, 28), 0.5
    )
    assert 'id="published"' not in qwen
