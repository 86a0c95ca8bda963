"""`omni-tasks report`: one HTML file per night for where no Grafana runs.

Rendered from `templates/report.html` by Jinja2 with autoescaping: every value is data; only
the charts and audio players built here are markup. The same pictures as the dashboard —
tail-fraction trend with intervals, failure modes, the night's verdicts — plus per-clip
baseline-vs-candidate WER and, for every regressed clip, the reference, both transcripts and an
audio player (audio embedded). Plotly's JavaScript (4.6 MB) is one `plotly.min.js` beside the
reports, shared by every report of the folder (`write_page`) and served with them.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import html
import json
import math
from collections.abc import Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import jinja2
import plotly.graph_objects as go
import plotly.io as pio
import psycopg
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from omni_tasks.alerts import groups
from omni_tasks.benchmarks.base import Words
from omni_tasks.benchmarks.reproduce import Reproducible, reproduce_command
from omni_tasks.config import get_settings
from omni_tasks.contracts import DecisionHistory, JsonObject
from omni_tasks.evidence.audio import AudioError, load_audio_bytes, opus_bytes
from omni_tasks.evidence.links import PLOTLY_JS, report_name
from omni_tasks.formatting import MISSING, pts_ci
from omni_tasks.records import NightRun
from omni_tasks.reports.standing import COLUMNS as STANDING_COLUMNS
from omni_tasks.reports.standing import standing_failures
from omni_tasks.series import PROTOCOLS, Series
from omni_tasks.store import alerts, results, views
from omni_tasks.store.runs import clip_records, latest_grading, runs_of_night
from omni_tasks.store.views import ModeCount, PairedWer
from omni_tasks.trust.redact import redact, secret_values

MAX_AUDIO_CLIPS = 30
TREND_DAYS = 90
DAY_MS = 24 * 3600 * 1000

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;width:100%}
td,th{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f4f4f4} .REGRESSED{background:#fdd}
.IMPROVED{background:#dfd} .SAME{background:#def} .UNKNOWN{background:#ffd} .INFRA{background:#ecf}
.sim{background:#fff3cd;border:1px solid #e0c36c;padding:.5em 1em} audio{width:220px}
.note{color:#555;font-size:.9em} .pass{background:#dfd} .fail{background:#fdd}
.not-evaluated{background:#ecf} .here{font-weight:bold}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:.5em}
"""


def report_path(benchmark: str, nightly: dt.date | str) -> Path:
    """Where the nightly writes a night's HTML report (alerts and the demo link to it)."""
    return get_settings().home / "reports" / report_name(benchmark, nightly)


def _t(x: object) -> str:
    """Data in a chart's text (titles, legend, axis labels, hover): plotly reads `<a href>`,
    `<b>` and `<br>` there, so it gets entities, which plotly shows as the characters."""
    return html.escape(str(x), quote=False)


def write_page(path: Path, page: str) -> Path:
    """Write a report whole (a reader never sees half of one), with the folder's one copy of
    plotly's JavaScript beside it: written when missing or from another plotly version."""
    path.parent.mkdir(parents=True, exist_ok=True)
    js = get_plotlyjs().encode()
    shared = path.parent / PLOTLY_JS
    if not shared.is_file() or shared.read_bytes() != js:
        _replace(shared, js)
    _replace(path, page.encode())
    return path


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def night_axis(nights: Iterable[dt.date]) -> dict[str, str | int]:
    """An x axis of nights that reads as dates: ticks on whole days, at most about eight; one
    night is one labelled category (a date axis would spread it over the hours around it)."""
    days = sorted(set(nights))
    if len(days) < 2:
        return {"type": "category"}
    step = max(1, math.ceil((days[-1] - days[0]).days / 8))
    return {"type": "date", "tickformat": "%Y-%m-%d", "dtick": step * DAY_MS}


def _fig(fig: go.Figure, div_id: str) -> Markup:
    """A chart as markup for the page (plotly's own, its texts made plain by `_t`)."""
    fig.update_layout(
        margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=380, template="plotly_white"
    )
    return Markup(pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id))


def trend_figure(rows: list[views.TrendRow]) -> go.Figure:
    fig = go.Figure()
    series: dict[str, list[views.TrendRow]] = {}
    for r in rows:
        if r.tail_fraction is None:  # a failed run has no figure (its table row says why)
            continue
        series.setdefault(_t(f"{r.branch} / {r.variant}"), []).append(r)
    for name, pts in sorted(series.items()):
        y = [p.tail_fraction or 0.0 for p in pts]  # None was left out above
        high = [(p.tail_ci_high or t) - t for p, t in zip(pts, y, strict=True)]
        low = [t - (p.tail_ci_low or t) for p, t in zip(pts, y, strict=True)]
        fig.add_trace(
            go.Scatter(
                x=[p.nightly.isoformat() for p in pts],
                y=y,
                mode="lines+markers",
                name=name,
                error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low},
            )
        )
    fig.update_layout(
        title="Tail fraction per branch (95 % Wilson interval)",
        xaxis=night_axis(p.nightly for pts in series.values() for p in pts),
        yaxis={"tickformat": ".0%", "rangemode": "tozero"},
    )
    return fig


def modes_figure(rows: list[ModeCount], baselines: set[str]) -> go.Figure:
    """Broken clips per side and failure mode, the baseline's bars first (`branch / variant`
    whose branch is a baseline of the night), then the candidates in the order stored."""
    sides = list(dict.fromkeys(r.branch for r in rows))
    sides.sort(key=lambda side: side.split(" / ")[0] not in baselines)  # stable: keeps order
    fig = go.Figure()
    for mode in sorted({r.mode for r in rows}):
        pts = [r for r in rows if r.mode == mode]
        fig.add_trace(
            go.Bar(x=[_t(p.branch) for p in pts], y=[p.clips for p in pts], name=_t(mode))
        )
    fig.update_layout(
        barmode="stack",
        title="Broken clips by failure mode",
        xaxis={"categoryorder": "array", "categoryarray": [_t(side) for side in sides]},
    )
    return fig


def scatter_figure(clips: list[PairedWer], baseline: str, candidate: str) -> go.Figure:
    # No grade means no audio (failed) or infra: drawn at 1.05 so it stays visible. Capped WERs
    # pile up on a few values (0, 1): each clip is nudged by a fixed amount from its id, so the
    # pile shows its size and the same clip sits in the same place every time.
    def v(x: float | None, utt: str, axis: str) -> float:
        return (1.05 if x is None else float(x)) + jitter(f"{utt}|{axis}")

    fig = go.Figure(
        go.Scatter(
            x=[v(c.baseline_wer, c.utt_id, "x") for c in clips],
            y=[v(c.candidate_wer, c.utt_id, "y") for c in clips],
            mode="markers",
            text=[_t(f"{c.utt_id}: {c.reference}") for c in clips],
            marker={"size": 6, "opacity": 0.6},
        )
    )
    # The diagonal: above it the candidate did worse on that clip.
    fig.add_shape(type="line", x0=-0.05, y0=-0.05, x1=1.1, y1=1.1, line={"dash": "dot"})
    fig.update_layout(
        title=_t(f"Per-clip capped WER: {baseline} (x) vs {candidate} (y), jittered ±0.02"),
        xaxis={"range": [-0.05, 1.12]},
        yaxis={"range": [-0.05, 1.12]},
    )
    return fig


def jitter(key: str, width: float = 0.02) -> float:
    """A fixed nudge in [-width, width] from `key` (the same clip, the same place)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return (int.from_bytes(digest, "big") / 0xFFFFFFFF * 2 - 1) * width


def audio_player(uri: str | None) -> Markup | str:
    """An embedded player for a clip (markup we build), or why there is none (text). The clip
    is embedded as Ogg Opus, a tenth of its WAV: a night's regressed clips, both sides, stay a
    few MB, and the file still travels alone."""
    if not uri:
        return "no audio"
    try:
        data = base64.b64encode(opus_bytes(load_audio_bytes(uri), uri)).decode()
    except AudioError as exc:  # unavailable, or not a WAV we decode
        return f"audio missing ({exc})"
    return Markup(f'<audio controls preload="none" src="data:audio/ogg;base64,{data}"></audio>')


def _wer(x: float | None) -> str:
    return "no grade" if x is None else f"{x:.2f}"


def _phi(history: JsonObject | None) -> str:
    """The run-level noise φ a decision's confirmation was widened by, and its window."""
    if history is None:
        return ""
    h = DecisionHistory.from_json(history)
    return f"{h.phi:.2f} ({h.phi_nights} nights)"


def _verdicts(rows: list[views.GateRow]) -> list[dict[str, object]]:
    return [
        {
            **dataclasses.asdict(r),
            "css": r.verdict,
            "confirmed": "yes" if r.confirmed else "no",
            "counts": f"{r.regressed} : {r.improved}",
            "delta": pts_ci(r.delta_tail_fraction, (r.delta_tail_ci_low, r.delta_tail_ci_high)),
            "p_holm": "" if r.mcnemar_p_holm is None else f"{r.mcnemar_p_holm:.2g}",
            "phi": _phi(r.history),
            # A missing or failed side, or an undecidable pair, says why on its own row.
            "why": "; ".join(str(x) for x in r.reasons or [])[:600]
            if r.verdict in ("INFRA", "UNKNOWN")
            else "",
        }
        for r in rows
    ]


def _official(rows: list[views.OfficialRow]) -> list[dict[str, object]]:
    """The harness's own mean per branch (failures left out), summary-only runs marked; none
    when no run has a mean WER."""
    if not any(r.official_mean is not None for r in rows):
        return []
    return [
        {
            "branch": f"{r.branch} / {r.variant}",
            "mean": _wer(r.official_mean),
            "evaluated": r.evaluated if r.evaluated is not None else "—",
            "rows": "summary-only: no per-clip rows, not gated" if r.summary_only else "per-clip",
        }
        for r in rows
    ]


def _published(
    conn: psycopg.Connection[Any], series: Series, runs: list[NightRun]
) -> list[dict[str, Any]]:
    """The model's published figures for the benchmark; beside each, the night's own figure
    only where it is measured by the same protocol (else: a reference, not a comparison)."""
    from omni_tasks.gates.published import published_for

    out = []
    for p in published_for(series):
        ours = "different protocol: a reference, not this series' scale"
        if p.comparable is not None:
            shown = [
                f"{name.split(' / ')[0]} {100 * value:.1f}"
                for name, value in _figure_of_runs(conn, series, runs, p.comparable)
            ]
            ours = f"same protocol ({p.comparable}): " + (", ".join(shown) or "no run tonight")
        out.append({**dataclasses.asdict(p), "value": f"{p.value:g} {p.unit}", "ours": ours})
    return out


def _fleet(rows: list[views.FleetRow], here: Series) -> list[dict[str, object]]:
    """The fleet's grid: each series' newest verdict, ours and upstream's, with upstream's
    failing nights and streak and whether its newest imported night was valid."""
    out: list[dict[str, object]] = []
    for r in rows:
        series = Series(r.benchmark, r.model, r.lane)
        protocol = f" · {r.variant}" if r.variant in PROTOCOLS else ""
        upstream = r.upstream_verdict is not None  # its record only beside its verdict
        out.append(
            {
                "series": series.label + protocol,
                "sku": r.sku or "—",
                "blocking": {None: "—", True: "blocking", False: "non-blocking"}[r.blocking],
                "css": "here" if series == here else "",
                "candidate": f"{r.candidate_branch} / {r.variant}" if r.candidate_branch else "—",
                "verdict": r.verdict or "—",
                "verdict_css": r.verdict or "—",
                "regressed_14d": r.regressed_14d if r.verdict else "—",
                "upstream": r.upstream_verdict or "—",
                "upstream_css": (r.upstream_verdict or "").replace(" ", "-"),
                "upstream_nightly": r.upstream_nightly or "—",
                "failing": r.upstream_failing_14d if upstream else "—",
                "streak": r.upstream_fail_streak if upstream else "—",
                "valid": "; ".join(r.validity or []) or ("valid" if upstream else "—"),
            }
        )
    return out


def published_figure(
    points: list[tuple[dt.date, str, float]], lines: list[tuple[float, str]], unit_label: str
) -> go.Figure:
    """The series' own figure per night and branch, with each published figure of the same
    protocol as a labelled horizontal line (another protocol is never drawn on this scale)."""
    fig = go.Figure()
    for name in sorted({b for _, b, _ in points}):
        pts = sorted((d, v) for d, b, v in points if b == name)
        fig.add_trace(
            go.Scatter(
                x=[d.isoformat() for d, _ in pts],
                y=[v for _, v in pts],
                mode="lines+markers",
                name=_t(name),
            )
        )
    for value, label in lines:
        fig.add_hline(y=value, line_dash="dash", line_color="#888", annotation_text=_t(label))
    fig.update_layout(
        title=_t(f"{unit_label} against the published figure (same protocol)"),
        xaxis=night_axis(d for d, _, _ in points),
    )
    return fig


def _published_chart(
    conn: psycopg.Connection[Any], series: Series, nightly: dt.date
) -> Markup | None:
    """The chart of `published_figure` over the trend window, when a published figure shares
    the series' protocol (None otherwise: the table says it is a reference only)."""
    from omni_tasks.gates.published import published_for

    same = [p for p in published_for(series) if p.comparable is not None]
    if not same:
        return None
    figure = same[0].comparable or ""
    points = []
    for back in range(TREND_DAYS, -1, -1):
        night = nightly - dt.timedelta(days=back)
        runs = runs_of_night(conn, series, night)
        points += [(night, n, v) for n, v in _figure_of_runs(conn, series, runs, figure)]
    lines = [(p.published_scale, f"published {p.value:g} {p.unit}: {p.source}") for p in same]
    return _fig(published_figure(points, lines, figure), "published")


def _figure_of_runs(
    conn: psycopg.Connection[Any], series: Series, runs: list[NightRun], figure: str
) -> list[tuple[str, float]]:
    """Upstream's `figure` recomputed from each graded run's items, by branch / variant."""
    from omni_tasks import benchmarks

    bench = benchmarks.get(series.benchmark)
    out = []
    for r in runs:
        if r.status not in ("complete", "partial") or r.grader is None:
            continue
        grading_id, _ = latest_grading(conn, r.run_id, r.run_key)
        value = bench.figure_mean(figure, clip_records(conn, grading_id))
        if value is not None:
            out.append((f"{r.branch} / {r.variant}", value))
    return out


def _gate_advice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The night's stored advice per upstream gate, in words (gates/text.py)."""
    from omni_tasks.gates.text import catches, rounded_threshold

    out = []
    for row in rows:
        a = row["advice"]
        lo, hi = a["p_fail_interval"]
        h = a["history"]
        never = "; never passed under this threshold" if h["never_passed"] else ""
        shift = (a["detectable_shift"], a["detectable_items"])
        line = rounded_threshold(a["suggested_threshold"], a["comparator"])
        d = a.get("design")  # advice stored before 2026-12-03 has none
        design = "—"
        if d and d["threshold"] is not None and a.get("design_p_fail") is not None:
            design = (
                f"θ {d['theta']:.4g}; {a['comparator']} {d['threshold']:.4g} "
                f"(fails {a['design_p_fail']:.1%} of nights by the model)"
            )
        out.append(
            {
                "gate": a["gate"],
                "p_fail": f"{a['p_fail']:.1%} [{lo:.1%}, {hi:.1%}]",
                "catches": catches(a["comparator"], a["figure"], *shift, "items"),
                "record": f"{h['failing']} of {h['nights']} nights failed{never}",
                "suggested": f"{a['comparator']} {line:.4g}",
                "design": design,
                "basis": a["basis"] or f"{a['nights']} nights",
            }
        )
    return out


SCORES = {"accuracy": "accuracy", "sim_mean": "speaker sim", "utmos_mean": "UTMOS"}


def _scores(rows: list[views.ScoreRow]) -> tuple[dict[str, str], list[dict[str, str]]] | None:
    """Accuracy (multiple choice) and secondary scores, when a run of the night has any:
    shown beside the gate, never gated. The table's columns and rows; None without any."""
    columns = {
        k: label for k, label in SCORES.items() if any(getattr(r, k) is not None for r in rows)
    }
    if not columns:
        return None
    return {"name": "branch", **columns}, [
        {"name": f"{r.branch} / {r.variant}", **{k: _score(getattr(r, k)) for k in columns}}
        for r in rows
    ]


def _score(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def _clips(rows: list[views.RegressedClip], words: Words) -> dict[str, Any]:
    """The regressed items' table in the family's words: each side's output (with its figure,
    for a family that has one); players for the first MAX_AUDIO_CLIPS, when a side has audio."""

    def said(heard: str | None, figure: float | None) -> str:
        shown = heard or words.no_output
        return f"{shown} ({_wer(figure)})" if words.metric else shown

    audio = any(r.audio_uri or r.baseline_audio_uri for r in rows)
    figure = f" ({words.metric})" if words.metric else ""
    columns = {
        "utt_id": words.item,
        "reference": "reference",
        "baseline": f"baseline {words.said}{figure}",
        "candidate": f"candidate {words.said}{figure}",
        **({"baseline_audio": "baseline audio", "audio": "candidate audio"} if audio else {}),
    }
    shown = [
        {
            **dataclasses.asdict(r),
            "baseline": said(r.baseline_heard, r.baseline_wer),
            "candidate": said(r.candidate_heard, r.candidate_wer),
            "audio": audio_player(r.audio_uri) if i < MAX_AUDIO_CLIPS else "",
            "baseline_audio": audio_player(r.baseline_audio_uri) if i < MAX_AUDIO_CLIPS else "",
        }
        for i, r in enumerate(rows)
    ]
    return {"title": f"Regressed {words.items} ({len(rows)})", "columns": columns, "rows": shown}


# The secrets `render` read once for the page: read per value, they cost a fleet night's
# reports half their time (bench/bench_fleet_year.py). A context variable, since values in an
# imported macro do not see the page's template context.
_SECRETS: ContextVar[list[str] | None] = ContextVar("report_secrets", default=None)


def _redacted(v: object) -> object:
    """The one redaction gate for every value shown (Markup is the report's own HTML)."""
    if isinstance(v, str) and not isinstance(v, Markup):
        return redact(v, _SECRETS.get())
    return v


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("omni_tasks", "templates"),
    autoescape=True,  # every value is data unless report_html wraps it in Markup
    finalize=_redacted,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
)


def render(template: str, **values: Any) -> str:
    """A report template rendered, the worker's secrets read once for all its values."""
    token = _SECRETS.set(secret_values())
    try:
        return TEMPLATES.get_template(template).render(**values)
    finally:
        _SECRETS.reset(token)


def _ablations(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stored ablation of the night: its reference line and one row per ablation."""

    def pct(k: int, n: int) -> str:
        return f"{k}/{n} ({k / n:.0%})" if n else MISSING

    out = []
    for r in results:
        ref = r["reference"]
        rows = [
            {
                **a,
                "broken": pct(a["broken"], a["n_clips"]),
                "ci": f"{a['share_ci'][0]:.0%}–{a['share_ci'][1]:.0%}",
                "left": pts_ci(a["left"], a["left_ci"]),
                "p_better": f"{a['p_better']:.2g}",
                "overrides": Markup("<code>{}</code>").format(
                    redact(json.dumps(a["overrides"], sort_keys=True))
                ),
            }
            for a in r["ablations"]
        ]
        out.append(
            {
                "id": r["ablate_id"],
                "candidate": pct(ref["candidate_broken"], ref["n_clips"]),
                "baseline": pct(ref["baseline_broken"], ref["n_clips"]),
                "reference": ref["text"],
                "budget": r["budget"],
                "seeds": r["seeds"],
                "rows": rows,
                "stage": r.get("stage_isolation"),
            }
        )
    return out


def nightly_report(
    conn: psycopg.Connection[Any], benchmark: Series, nightly: dt.date, tau: float
) -> str:
    """A series' night (`benchmark` is the series: model × benchmark × lane)."""
    from omni_tasks import benchmarks

    bench = benchmarks.get(benchmark.benchmark)
    words = bench.words
    decisions = views.gate_history(conn, benchmark, nightly)
    first = nightly - dt.timedelta(days=TREND_DAYS)
    comparisons = []
    compared = [(d, d.comparison_id) for d in decisions if d.comparison_id is not None]
    for i, (d, comparison_id) in enumerate(compared):
        pairs = views.paired_clip_wers(conn, comparison_id)
        scatter = scatter_figure(pairs, d.baseline_branch, d.candidate_branch)
        comparisons.append(
            {
                "title": f"{d.candidate_branch} vs {d.baseline_branch} ({d.variant}): per "
                f"{words.item}",
                "scatter": _fig(scatter, f"scatter{i}"),
                "clips": _clips(views.comparison_regressed_clips(conn, comparison_id), words),
            }
        )
    runs = runs_of_night(conn, benchmark, nightly)
    baselines = {d.baseline_branch for d in decisions if d.nightly == nightly}
    return render(
        "report.html",
        standing=standing_failures(conn, benchmark, baselines or {"main"}, nightly),
        title=f"{benchmark.name} nightly {nightly}",
        css=Markup(CSS),
        plotly_js=PLOTLY_JS,
        simulated=views.night_simulated(conn, benchmark, nightly),
        decisions=_verdicts(decisions),
        official=_official(views.official(conn, benchmark, nightly)),
        scores=_scores(views.item_scores(conn, benchmark, tau, nightly)),
        gate_advice=_gate_advice(results.gate_advice_of_night(conn, benchmark, nightly)),
        ablations=_ablations(alerts.ablations_of_night(conn, benchmark.key, nightly)),
        groups=groups.of_night(conn, benchmark, nightly),
        published=_published(conn, benchmark, runs),
        published_chart=_published_chart(conn, benchmark, nightly),
        fleet=_fleet(views.fleet_overview(conn), benchmark),
        trend=_fig(
            trend_figure(views.nightly_trend(conn, benchmark, tau, first, nightly)), "trend"
        ),
        modes=_fig(
            modes_figure(views.failure_modes(conn, benchmark, tau, nightly), baselines), "modes"
        ),
        reproduce=[
            {
                "name": f"{r.branch} / {r.variant}",
                "seed": r.seed,
                "command": reproduce_command(Reproducible.of_run(r), r.grader),
            }
            for r in runs
        ],
        comparisons=comparisons,
        generated=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M}",
        broken=_broken_note(bench.judged == "wer", bench.broken_label(tau), words),
        standing_columns=STANDING_COLUMNS,
    )


def _broken_note(by_figure: bool, label: str, words: Words) -> str:
    """What counts against a side, in the family's words."""
    broken = words.broken[:1].upper() + words.broken[1:]
    if by_figure:
        return f"{broken} = {label}, or {words.no_output}."
    return f"{broken} include {words.items} with {words.no_output}."
