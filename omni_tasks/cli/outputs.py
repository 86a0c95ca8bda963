"""Dashboards and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omni_tasks.cli import options as opt
from omni_tasks.cli.common import app, console, dashboards_app, fail
from omni_tasks.contracts import JsonObject


@dashboards_app.command("build")
def dashboards_build(
    check: Annotated[
        bool, typer.Option(help="Only check the committed JSON is what the code generates")
    ] = False,
) -> None:
    """Write dashboards/*.json from omni_tasks/grafana/dashboards.py."""
    from omni_tasks.grafana.dashboards import DASHBOARD_DIR, dashboards, render, write_all

    if check:

        def current(name: str, d: JsonObject) -> bool:
            path = DASHBOARD_DIR / name
            return path.is_file() and path.read_text(encoding="utf-8") == render(d)

        if stale := [n for n, d in dashboards().items() if not current(n, d)]:
            fail(f"out of date: {', '.join(stale)}; run `omni-tasks dashboards build`")
        console.print("dashboards up to date")
        return
    for path in write_all():
        console.print(f"wrote {path}")


@dashboards_app.command("push")
def dashboards_push() -> None:
    """Push dashboards and new event annotations to Grafana (OMNI_GRAFANA_URL/_TOKEN)."""
    from omni_tasks.grafana.push import refresh

    console.print(opt.on_db(refresh).summary)


@app.command("report")
def report_cmd(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="HTML file to write (default: the home's reports folder)"),
    ] = None,
    nightly: Annotated[
        str | None, typer.Option(metavar="DATE", help="Nightly date (default: the latest)")
    ] = None,
    benchmark: opt.BenchmarkOpt = None,
    model: opt.ServedModelOpt = None,
    lane: opt.LaneOpt = None,
    tail_threshold: opt.TailThreshold = None,
) -> None:
    """One HTML report of a series' nightly: verdicts, trend, failure modes, per-clip plots
    and the regressed clips with their audio (for where no Grafana runs). Plotly's script is
    written once beside it (plotly.min.js): copy both to move the report."""
    from omni_tasks.reports.html import PLOTLY_JS, nightly_report, report_path, write_page

    bench = opt.series_of(benchmark, model, lane)
    _, tau = opt.policy_and_tau(tail_threshold)
    with opt.open_db() as conn:
        missing = f"no gated nightly stored for {bench.label} (run `omni-tasks gate` first)"
        night = opt.night_of(conn, nightly, bench, True, missing)
        page = nightly_report(conn, bench, night, tau)
    out = write_page(out or report_path(bench.slug, night), page)
    console.print(
        f"wrote {out} ({len(page.encode()) / 1e6:.1f} MB; charts load {PLOTLY_JS} beside it)",
    )
