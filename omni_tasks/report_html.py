"""`omni-tasks report`: one self-contained HTML file for where no Grafana runs.

The same pictures as the dashboard — tail-fraction trend with intervals, failure modes, the
night's verdicts — plus per-clip baseline-vs-candidate WER and, for every regressed clip, the
reference, both transcripts and an audio player (audio embedded, so the file travels alone).
"""

from __future__ import annotations

import base64
import datetime as dt
import html
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import psycopg
from plotly.offline import get_plotlyjs

from omni_tasks.audio import AudioUnavailable, load_audio_bytes
from omni_tasks.formatting import pts_ci
from omni_tasks.reproduce import reproduce_command
from omni_tasks.store import views
from omni_tasks.store.runs import runs_of_night

MAX_AUDIO_CLIPS = 30
TREND_DAYS = 90

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;width:100%}
td,th{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f4f4f4} .REGRESSED{background:#fdd}
.IMPROVED{background:#dfd} .SAME{background:#def} .UNKNOWN{background:#ffd} .INFRA{background:#ecf}
.sim{background:#fff3cd;border:1px solid #e0c36c;padding:.5em 1em} audio{width:220px}
.note{color:#555;font-size:.9em}
"""


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _t(x: object) -> str:
    """Data in a chart's text (titles, legend, axis labels, hover): plotly reads `<a href>`,
    `<b>` and `<br>` there, so it gets entities, which plotly shows as the characters."""
    return html.escape(str(x), quote=False)


def _fig(fig: go.Figure, div_id: str) -> str:
    fig.update_layout(
        margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=380, template="plotly_white"
    )
    return str(pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id))


def trend_figure(rows: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["tail_fraction"] is None:  # a failed run has no figure (its table row says why)
            continue
        series.setdefault(_t(f"{r['branch']} / {r['variant']}"), []).append(r)
    for name, pts in sorted(series.items()):
        y = [p["tail_fraction"] for p in pts]
        high = [(p["tail_ci_high"] or t) - t for p, t in zip(pts, y, strict=True)]
        low = [t - (p["tail_ci_low"] or t) for p, t in zip(pts, y, strict=True)]
        fig.add_trace(
            go.Scatter(
                x=[p["nightly"].isoformat() for p in pts],
                y=y,
                mode="lines+markers",
                name=name,
                error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low},
            )
        )
    fig.update_layout(
        title="Tail fraction per branch (95 % Wilson interval)",
        yaxis={"tickformat": ".0%", "rangemode": "tozero"},
    )
    return fig


def modes_figure(rows: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    for mode in sorted({r["mode"] for r in rows}):
        pts = [r for r in rows if r["mode"] == mode]
        fig.add_trace(
            go.Bar(x=[_t(p["branch"]) for p in pts], y=[p["clips"] for p in pts], name=_t(mode))
        )
    fig.update_layout(barmode="stack", title="Broken clips by failure mode")
    return fig


def scatter_figure(clips: list[dict[str, Any]], baseline: str, candidate: str) -> go.Figure:
    # No grade means no audio (failed) or infra: drawn at 1.05 so it stays visible.
    def v(x: float | None) -> float:
        return 1.05 if x is None else float(x)

    fig = go.Figure(
        go.Scatter(
            x=[v(c["baseline_wer"]) for c in clips],
            y=[v(c["candidate_wer"]) for c in clips],
            mode="markers",
            text=[_t(f"{c['utt_id']}: {c['reference']}") for c in clips],
            marker={"size": 6, "opacity": 0.6},
        )
    )
    fig.update_layout(
        title=_t(f"Per-clip capped WER: {baseline} (x) vs {candidate} (y)"),
        xaxis={"range": [-0.05, 1.1]},
        yaxis={"range": [-0.05, 1.1]},
    )
    return fig


def _audio(uri: str | None) -> str:
    if not uri:
        return '<span class="note">no audio</span>'
    try:
        data = base64.b64encode(load_audio_bytes(uri)).decode()
    except AudioUnavailable as exc:
        return f'<span class="note">audio missing ({_e(exc)})</span>'
    return f'<audio controls preload="none" src="data:audio/wav;base64,{data}"></audio>'


def clips_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "<tr><th>clip</th><th>reference</th><th>baseline heard (WER)</th>"
        "<th>candidate heard (WER)</th><th>audio</th></tr>"
    )
    body = []
    for i, r in enumerate(rows):
        audio = _audio(r.get("audio_uri")) if i < MAX_AUDIO_CLIPS else ""
        body.append(
            f"<tr><td>{_e(r['utt_id'])}</td><td>{_e(r['reference'])}</td>"
            f"<td>{_e(r['baseline_heard'])} ({_wer(r['baseline_wer'])})</td>"
            f"<td>{_e(r['candidate_heard'])} ({_wer(r['candidate_wer'])})</td><td>{audio}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _wer(x: float | None) -> str:
    return "no grade" if x is None else f"{x:.2f}"


def verdict_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "<tr><th>candidate</th><th>baseline</th><th>variant</th><th>verdict</th>"
        "<th>confirmed</th><th>regressed : improved</th><th>stable-broken</th>"
        "<th>Δ tail [95 %]</th><th>p (Holm)</th></tr>"
    )
    body = []
    for r in rows:
        ci = (r["delta_tail_ci_low"], r["delta_tail_ci_high"])
        p = "" if r["mcnemar_p_holm"] is None else f"{r['mcnemar_p_holm']:.2g}"
        body.append(
            f"<tr class='{_e(r['verdict'])}'><td>{_e(r['candidate_branch'])}</td>"
            f"<td>{_e(r['baseline_branch'])}</td><td>{_e(r['variant'])}</td>"
            f"<td>{_e(r['verdict'])}</td><td>{'yes' if r['confirmed'] else 'no'}</td>"
            f"<td>{_e(r['regressed'])} : {_e(r['improved'])}</td><td>{_e(r['stable_broken'])}</td>"
            f"<td>{pts_ci(r['delta_tail_fraction'], ci)}</td>"
            f"<td>{p}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def official_table(rows: list[dict[str, Any]]) -> str:
    """The harness's own mean per branch (failures left out), summary-only runs marked."""
    if not any(r["official_mean"] is not None for r in rows):
        return (
            "<p>No run with the harness's mean WER (a benchmark not scored by WER shows its "
            "accuracy below).</p>"
        )
    body = "".join(
        f"<tr><td>{_e(r['branch'])} / {_e(r['variant'])}</td><td>{_wer(r['official_mean'])}</td>"
        f"<td>{r['evaluated'] if r['evaluated'] is not None else '—'}</td>"
        f"<td>{'summary-only: no per-clip rows, not gated' if r['summary_only'] else 'per-clip'}"
        "</td></tr>"
        for r in rows
    )
    return (
        "<table><tr><th>branch</th><th>official mean WER</th><th>clips evaluated</th>"
        f"<th>rows</th></tr>{body}</table>"
    )


def scores_section(rows: list[dict[str, Any]]) -> list[str]:
    """Accuracy (multiple choice) and secondary scores, when a run of the night has any:
    shown beside the gate, never gated."""
    columns = [
        (k, label)
        for k, label in (
            ("accuracy", "accuracy"),
            ("sim_mean", "speaker sim"),
            ("utmos_mean", "UTMOS"),
        )
        if any(r[k] is not None for r in rows)
    ]
    if not columns:
        return []
    head = "".join(f"<th>{label}</th>" for _, label in columns)
    body = "".join(
        f"<tr><td>{_e(r['branch'])} / {_e(r['variant'])}</td>"
        + "".join(f"<td>{'—' if r[k] is None else f'{r[k]:.4f}'}</td>" for k, _ in columns)
        + "</tr>"
        for r in rows
    )
    return [
        "<h2>Scores beside the gate (never gated)</h2>"
        f"<table><tr><th>branch</th>{head}</tr>{body}</table>"
    ]


def page(title: str, sections: list[str], simulated: bool) -> str:
    banner = (
        '<p class="sim">Contains <b>SIMULATED</b> runs (the local simulator stands in for '
        "vLLM-Omni); figures show the platform working, not a model's accuracy.</p>"
        if simulated
        else ""
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{_e(title)}</h1>{banner}{''.join(sections)}"
        f"<p class='note'>Generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by omni-tasks. "
        "Broken = WER &gt; τ, no audio, or past the audio cap (seed-TTS); a wrong answer "
        "(multiple choice).</p></body></html>"
    )


def nightly_report(
    conn: psycopg.Connection[Any], benchmark: str, nightly: dt.date, tau: float
) -> str:
    decisions = views.gate_history(conn, benchmark, nightly)
    first = nightly - dt.timedelta(days=TREND_DAYS)
    trend = views.nightly_trend(conn, benchmark, tau, first, nightly)
    modes = views.failure_modes(conn, benchmark, tau, nightly)
    simulated = views.night_simulated(conn, benchmark, nightly)
    official = views.official(conn, benchmark, nightly)
    scores = views.item_scores(conn, benchmark, tau, nightly)
    runs = runs_of_night(conn, benchmark, nightly)
    reproduce = "".join(
        f"<p>{_e(r['branch'])} / {_e(r['variant'])} (seed {r['seed']}):</p>"
        f"<pre>{_e(reproduce_command(r, {'grader': r['grader']}))}</pre>"
        for r in runs
    )
    verdicts = verdict_table(decisions) if decisions else "<p>No gate decisions.</p>"
    sections = [
        f"<h2>Verdicts</h2>{verdicts}",
        "<h2>Harness figures</h2>" + official_table(official),
        *scores_section(scores),
        "<h2>Trend</h2>" + _fig(trend_figure(trend), "trend"),
        "<h2>Failure modes</h2>" + _fig(modes_figure(modes), "modes"),
        "<h2>Reproduce</h2>" + (reproduce or "<p>No runs.</p>"),
    ]
    for i, d in enumerate(x for x in decisions if x["comparison_id"] is not None):
        clips = views.regressed_clips(conn, d["comparison_id"])
        pairs = views.paired_clip_wers(conn, d["comparison_id"])
        title = f"{d['candidate_branch']} vs {d['baseline_branch']} ({d['variant']})"
        sections.append(f"<h2>{_e(title)}: per clip</h2>")
        sections.append(
            _fig(scatter_figure(pairs, d["baseline_branch"], d["candidate_branch"]), f"scatter{i}")
        )
        sections.append(f"<h3>Regressed clips ({len(clips)})</h3>" + clips_table(clips))
    return page(f"{benchmark} nightly {nightly}", sections, simulated)
