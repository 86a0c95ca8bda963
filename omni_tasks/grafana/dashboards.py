"""Dashboards as code: the trend dashboard's JSON, generated from Python.

`omni-tasks dashboards build` writes `dashboards/*.json` (stable uids) and a test keeps the
committed files equal to this code's output. Panels read the views of
`sql/migrations/0002_dashboard_views.sql` through the read-only `omni_reader` role.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from omni_tasks.config import REPO_ROOT
from omni_tasks.contracts import JsonObject
from omni_tasks.evidence.links import DASHBOARD_UID
from omni_tasks.formatting import pct
from omni_tasks.gates.policy import load_policy
from omni_tasks.grafana.builders import (
    DATASOURCE,
    coloured,
    fixed,
    line,
    link,
    linked,
    override,
    panel,
    table,
    target,
    units,
    variable,
)

DASHBOARD_DIR = REPO_ROOT / "dashboards"
# Panels read the `datasource` variable, whose default is the provisioned datasource's uid: a
# provisioned Grafana needs nothing, and the JSON imported into another Grafana asks for one.
PROVISIONED_UID = "omni-results"
# Where the evidence app (reports, audio) and the Airflow UI are reached: the API server.
EVIDENCE_DEFAULT = "http://localhost:8080"
TREND_UID = DASHBOARD_UID
LEGACY_GATE = 0.35  # the old nightly's mean-WER threshold, drawn for continuity
# A panel shows one series (model × benchmark × lane): lanes are never pooled.
SERIES_FILTER = "benchmark = '$benchmark' AND model = '$model' AND lane = '$lane'"
KEY_FILTERS = SERIES_FILTER + " AND branch IN ($branch) AND variant IN ($variant)"
FILTERS = KEY_FILTERS + " AND tau = $tau"
# Counts per category and night, stacked (failure modes, origins).
STACKED_BARS: JsonObject = {"drawStyle": "bars", "stacking": {"mode": "normal"}, "fillOpacity": 80}
VERDICT_COLOURS = {
    "REGRESSED": "red",
    "IMPROVED": "green",
    "SAME": "blue",
    "UNKNOWN": "yellow",
    "INFRA": "purple",
}
UPSTREAM_COLOURS = {"fail": "red", "not evaluated": "purple", "pass": "blue"}  # as ours


def published_sql() -> str:
    """The published figures of the series' protocol (`comparable`) as labelled constant
    lines over the time range, on the figure's own scale; the others are never drawn."""
    from omni_tasks.gates.published import load_published

    def q(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    rows = [
        f"({q(p.benchmark)}, {q(p.model)}, {q(f'published {p.value:g} {p.unit} ({p.source})')}, "
        f"{p.published_scale!r}::float8)"
        for p in load_published()
        if p.comparable is not None
    ]
    return (
        "SELECT time, label AS metric, value FROM (VALUES "
        + ", ".join(rows)
        + ") AS p(benchmark, model, label, value) CROSS JOIN generate_series("
        "$__timeFrom()::timestamptz, $__timeTo()::timestamptz, interval '1 day') AS time "
        "WHERE p.benchmark = '$benchmark' AND p.model = '$model' ORDER BY 1"
    )


TREND_FROM = "FROM omni.v_nightly_trend WHERE $__timeFilter(time) AND " + FILTERS
SCORES_FROM = "FROM omni.v_item_scores WHERE $__timeFilter(time) AND " + FILTERS


def _lines(source: str, *lines: tuple[str, str]) -> list[JsonValue]:
    """One target per (name, column): each branch / variant's line of `column` from `source`,
    named `branch / variant name` (no name: the branch / variant alone)."""
    out: list[JsonValue] = []
    for ref, (name, column) in zip("ABCD", lines, strict=False):
        label = f" || ' {name}'" if name else ""
        sql = f"SELECT time, branch || ' / ' || variant{label} AS metric, {column} {source} ORDER BY 1"
        out.append(target(sql, ref))
    return out


def _split(view: str, by: str, column: str) -> list[JsonValue]:
    """Each branch's line per value of `by` (a failure mode, an origin) of `column` in `view`."""
    return [
        target(
            f"SELECT time, branch || ' ' || {by} AS metric, {column} FROM omni.{view} "
            f"WHERE $__timeFilter(time) AND {FILTERS} ORDER BY 1"
        )
    ]


def panels(slo_tail: float) -> list[JsonValue]:
    """The trend dashboard's panels, top to bottom."""
    return [
        *_trend_panels(slo_tail),
        *_decision_panels(),
        *_context_panels(),
        *_ledger_panels(),
    ]


def _trend_panels(slo_tail: float) -> list[JsonValue]:
    """The series' nightly figures: the tail, the means, and what the broken items were."""
    return [
        panel(
            1,
            "Tail fraction (share of broken items: WER > τ, or a wrong answer)",
            "timeseries",
            (0, 0, 12, 9),
            _lines(
                TREND_FROM,
                ("", "tail_fraction"),
                ("95 % low", "tail_ci_low"),
                ("95 % high", "tail_ci_high"),
            ),
            "Broken = WER > τ, no audio, or past the audio cap (seed-TTS); a wrong answer "
            "(multiple choice: the panel is then the error rate). Seeds pooled. Dashed: Wilson "
            f"95 % interval. Red line: the SLO ({pct(slo_tail, 0)}).",
            override(
                " 95 % (low|high)$",
                {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [4, 4]}},
                by="byRegexp",
            ),
            unit="percentunit",
            min=0,
            **line(slo_tail, "red"),
        ),
        panel(
            2,
            "Capped mean WER (and the legacy uncapped mean)",
            "timeseries",
            (12, 0, 12, 9),
            [
                *_lines(TREND_FROM, ("", "capped_mean_wer"), ("legacy mean", "mean_wer")),
                target(
                    "SELECT time, branch || ' / ' || variant || CASE WHEN summary_only THEN "
                    "' official (summary-only)' ELSE ' official' END AS metric, official_mean "
                    "FROM omni.v_official_trend WHERE $__timeFilter(time) AND "
                    + KEY_FILTERS
                    + " ORDER BY 1",
                    "C",
                ),
            ],
            "Capped mean = mean of min(WER, 1): one runaway clip moves it by at most 1/n. The "
            f"legacy uncapped mean is the old gate's figure (line at {LEGACY_GATE}). 'official' "
            "is the harness's own mean (failures left out), also for summary-only imports, "
            "which have no per-clip rows and so no other figure here.",
            min=0,
            **line(LEGACY_GATE, "orange"),
        ),
        panel(
            3,
            "Failure modes of broken clips",
            "timeseries",
            (0, 9, 12, 8),
            _split("v_failure_modes", "mode", "clips"),
            "over_generation: heard ≥ 2× the reference's words; truncated ≤ 0.5×; garbled "
            "between; no_output: no audio.",
            custom=STACKED_BARS,
        ),
        panel(
            4,
            "Origin of broken clips",
            "timeseries",
            (12, 9, 6, 8),
            _split("v_origin_mix", "origin", "clips"),
            "thinker: the model's own text was already wrong (WER > 0.1); talker: the text was "
            "right, the speech was not.",
            custom=STACKED_BARS,
        ),
        panel(
            5,
            "Questions vs statements",
            "timeseries",
            (18, 9, 6, 8),
            _split("v_question_split", "kind", "tail_fraction"),
            "Tail fraction of questions and requests vs statements (answered questions are a "
            "known failure).",
            unit="percentunit",
            min=0,
        ),
    ]


def _decision_panels() -> list[JsonValue]:
    """The gate's decisions: their history, the newest paired A/B, its regressed clips."""
    return [
        table(
            6,
            "Verdict history",
            (0, 17, 12, 9),
            "SELECT time, candidate_branch, baseline_branch, variant, verdict, confirmed, "
            "mcnemar_p_holm, delta_tail_fraction, regressed, improved FROM omni.v_gate_history "
            f"WHERE $__timeFilter(time) AND {SERIES_FILTER} AND candidate_branch IN "
            "($branch) AND variant IN ($variant) ORDER BY time DESC",
            "One row per gate decision. Alerts fire on confirmed REGRESSED only.",
            *units(mcnemar_p_holm="sci", delta_tail_fraction="percentunit"),
            coloured("verdict", VERDICT_COLOURS),
        ),
        table(
            7,
            "Latest paired A/B",
            (12, 17, 12, 9),
            "SELECT nightly, candidate_branch, baseline_branch, variant, verdict, confirmed, "
            "stable_broken, regressed, improved, mcnemar_p, mcnemar_p_holm, delta_tail_fraction, "
            "delta_tail_ci_low, delta_tail_ci_high, comparison_id FROM omni.v_latest_paired "
            f"WHERE {SERIES_FILTER} AND candidate_branch IN ($branch) AND variant IN "
            "($variant) ORDER BY nightly DESC",
            "The newest decision per candidate: the paired table and exact McNemar p. Click a "
            "comparison to list its regressed clips below.",
            *units(
                mcnemar_p="sci",
                mcnemar_p_holm="sci",
                delta_tail_fraction="percentunit",
                delta_tail_ci_low="percentunit",
                delta_tail_ci_high="percentunit",
            ),
            linked(
                "comparison_id",
                "regressed clips",
                "/d/"
                + TREND_UID
                + "?${__url_time_range}&var-benchmark=$benchmark&var-model=$model&var-lane=$lane&var-comparison=${__value.raw}",
            ),
        ),
        table(
            8,
            "Regressed clips of comparison $comparison",
            (0, 26, 24, 10),
            "SELECT utt_id, reference, baseline_heard, baseline_wer, candidate_heard, "
            "candidate_wer, candidate_status, CASE WHEN audio_uri LIKE '%/.imports/%' "
            "THEN NULL ELSE substring(audio_uri from '([^/]+/[^/]+)$') END AS audio, "
            "thinker_text FROM omni.v_regressed_clips WHERE comparison_id = $comparison "
            "ORDER BY candidate_wer DESC NULLS LAST",
            "Clips fine in the baseline and broken in the candidate: what was said, what was "
            "heard, and the audio (click it: the evidence app plays the candidate's clip).",
            linked(
                "audio",
                "play the candidate's clip",
                "${evidence}/omni/audio/${__value.raw}",
                targetBlank=True,
            ),
        ),
    ]


def _context_panels() -> list[JsonValue]:
    """What no verdict reads: secondary scores, the fleet, summaries, gate advice, health."""
    return [
        panel(
            9,
            "Accuracy and secondary scores (never gated)",
            "timeseries",
            (0, 36, 24, 8),
            [
                *_lines(
                    SCORES_FROM,
                    ("accuracy", "accuracy"),
                    ("speaker sim", "sim_mean"),
                    ("UTMOS", "utmos_mean"),
                ),
                target(published_sql(), "D"),
            ],
            "A multiple-choice benchmark's accuracy (its gate reads wrong answers, above); the "
            "speaker similarity and UTMOS means seed-TTS items carry when the harness computed "
            "them. Shown for context: no verdict reads them. A dashed 'published' line is the "
            "model's own reported figure (gates/published.yaml), drawn only where it was "
            "measured by the same protocol as this series' figure.",
        ),
        table(
            11,
            "Fleet overview: every series' latest verdict, ours and upstream's",
            (0, 50, 24, 8),
            "SELECT benchmark, model, lane, candidate_branch, variant, nightly, verdict, "
            "regressed_14d, upstream_verdict, upstream_nightly, upstream_failing_14d, "
            "upstream_fail_streak, CASE WHEN jsonb_array_length(validity) = 0 THEN "
            "'valid' ELSE validity ->> 0 END AS validity FROM omni.v_fleet_latest "
            "ORDER BY benchmark, model, lane, candidate_branch",
            "One row per series (model × benchmark × lane) and candidate: our latest verdict, "
            "REGRESSED nights in the last 14, and the verdict upstream's own pytest gate gave "
            "the newest imported run (Buildkite), the nights it failed in the last 14, its "
            "consecutive failures, and whether that night was valid (the first problem when "
            "not). Click a benchmark to open its series here.",
            linked(
                "benchmark",
                "open this series",
                "/d/" + TREND_UID + "?var-benchmark=${__data.fields.benchmark}"
                "&var-model=${__data.fields.model}"
                "&var-lane=${__data.fields.lane}",
            ),
            coloured(
                "^(verdict|upstream_verdict)$",
                {**VERDICT_COLOURS, **UPSTREAM_COLOURS},
                by="byRegexp",
            ),
        ),
        panel(
            12,
            "Summary-only figures (judge means and summaries without items; never gated)",
            "timeseries",
            (0, 58, 24, 8),
            [
                target(
                    "SELECT time, branch || ' ' || figure || coalesce(' @' || left(protocol_pin, "
                    "7), '') AS metric, value FROM omni.v_summary_figures WHERE "
                    f"$__timeFilter(time) AND {SERIES_FILTER} AND branch IN ($branch) AND "
                    "figure NOT LIKE '%.by_task.%' AND figure <> 'duplex_samples' ORDER BY 1",
                ),
            ],
            "A summary-only night's own figures as its artifact reported them: Omni-DuplexEval's "
            "RTD content and temporal scores and PR success, or a seed-TTS / multiple-choice "
            "summary without per-item rows. A protocol pin is part of the line's name, so "
            "nights judged under another evaluator version never join the same line.",
        ),
        table(
            10,
            "Upstream gate advice (its chance of failing a night with nothing changed)",
            (0, 44, 24, 6),
            "SELECT gate, p_fail, p_fail_low, p_fail_high, suggested, nights, nightly "
            f"FROM omni.gate_advice WHERE {SERIES_FILTER} AND nightly = (SELECT "
            f"max(nightly) FROM omni.gate_advice WHERE {SERIES_FILTER}) ORDER BY gate",
            "For each of the series' upstream pytest gates (the gate table, or the series' "
            "`upstream_gate`): the chance it fails a night with nothing changed (with its 95 % "
            "interval) and the threshold that would fail 1 night in 50, from the stored nights "
            "of the baseline (`omni-tasks gates advise` says what it catches and writes the PR "
            "text).",
            override("^p_fail", {"id": "unit", "value": "percentunit"}, by="byRegexp"),
        ),
        table(
            13,
            "Platform health: Slack outbox backlog and Buildkite sync staleness",
            (0, 66, 24, 6),
            "SELECT 'outbox' AS what, pending::text || ' pending, ' || failed::text || "
            "' failed' AS state, oldest_pending_at AS since FROM omni.v_outbox_backlog "
            "UNION ALL SELECT 'sync ' || pipeline, 'build ' || last_build::text || ', ' "
            "|| hours_since::text || ' h ago', last_imported_at FROM "
            "omni.v_sync_staleness ORDER BY 1",
            "The platform watching itself: messages not yet delivered to Slack (and the oldest "
            "one's age), and each Buildkite pipeline's newest imported build and how long ago "
            "the sync imported it. A night with no decision by 09:00 UTC is an INFRA alert "
            "(omni_freshness).",
        ),
    ]


LEDGER_FILTER = SERIES_FILTER + " AND branch IN ($branch)"


def _ledger_panels() -> list[JsonValue]:
    """The standing failures (the ledger, issue 69): the chronic set by mode night by night,
    and the set as of the latest night the ledger was read."""
    return [
        panel(
            14,
            "Standing failures: chronic items by mode",
            "timeseries",
            (0, 72, 12, 9),
            [
                target(
                    "SELECT nightly::timestamptz AS time, branch || ' ' || coalesce(mode, "
                    "'unknown') AS metric, count(*) AS items FROM omni.v_ledger_chronic WHERE "
                    f"$__timeFilter(nightly) AND {LEDGER_FILTER} GROUP BY 1, 2 "
                    "ORDER BY 1"
                )
            ],
            "Items broken night after night (chronic: the broken rate's exact lower bound "
            "above the ledger policy's level over enough nights; new: chronic since a night), "
            "per failure mode, on each night the ledger was read (the nightly report reads "
            "it). `omni-tasks items chronic` lists them.",
            custom=STACKED_BARS,
        ),
        table(
            15,
            "Standing failures: the current chronic set",
            (12, 72, 12, 9),
            "SELECT branch, utt_id, state, coalesce(mode, 'unknown') AS mode, nightly FROM "
            f"omni.v_ledger_chronic c WHERE {LEDGER_FILTER} AND nightly = (SELECT "
            "max(nightly) FROM omni.v_ledger_chronic l WHERE l.benchmark = c.benchmark AND "
            "l.model = c.model AND l.lane = c.lane AND l.branch = c.branch) "
            "ORDER BY branch, mode, utt_id",
            "The chronic and new items of each branch as of its latest ledger night. "
            "`omni-tasks items show ITEM` prints an item's nights and both transcripts of its "
            "latest broken night.",
            coloured("state", {"new": "orange", "chronic": "red"}),
        ),
    ]


def _templating() -> list[JsonValue]:
    """The dashboard's variables: the datasource, the evidence server, then the series."""
    return [
        fixed(
            "datasource",
            "results DB",
            "datasource",
            "grafana-postgresql-datasource",
            PROVISIONED_UID,
        ),
        fixed(
            "evidence",
            "evidence server (OMNI_PUBLIC_URL)",
            "textbox",
            EVIDENCE_DEFAULT,
            EVIDENCE_DEFAULT,
        ),
        variable("benchmark", "SELECT DISTINCT benchmark FROM omni.run ORDER BY 1"),
        variable(
            "model",
            "SELECT DISTINCT model FROM omni.run WHERE benchmark = '$benchmark' ORDER BY 1",
        ),
        variable(
            "lane",
            "SELECT DISTINCT lane FROM omni.run WHERE benchmark = '$benchmark' AND "
            "model = '$model' ORDER BY 1",
            label="hardware lane",
        ),
        variable(
            "branch",
            f"SELECT DISTINCT branch FROM omni.run WHERE {SERIES_FILTER} ORDER BY 1",
            multi=True,
        ),
        variable(
            "variant",
            f"SELECT DISTINCT variant FROM omni.run WHERE {SERIES_FILTER} ORDER BY 1",
            multi=True,
        ),
        fixed("tau", "τ", "custom", "0.5,1", "0.5", multi=False, includeAll=False),
        variable(
            "comparison",
            f"SELECT comparison_id FROM omni.v_latest_paired WHERE {SERIES_FILTER} "
            "AND comparison_id IS NOT NULL ORDER BY nightly DESC",
        ),
    ]


def trend_dashboard() -> JsonObject:
    policy = load_policy()
    return {
        "uid": TREND_UID,
        "title": "omni-tasks · nightly trend",
        "tags": ["omni-tasks", "seed-tts", "daily-omni", "videomme"],
        "timezone": "utc",
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-90d", "to": "now"},
        "refresh": "",
        "links": [
            link("Nightly reports", "${evidence}/omni/"),
            link("Airflow: the nightly", "${evidence}/dags/omni_nightly"),
        ],
        "templating": {"list": _templating()},
        "annotations": {
            "list": [
                {
                    "name": "omni events",
                    "enable": True,
                    "iconColor": "purple",
                    "datasource": DATASOURCE,
                    "target": target(
                        "SELECT time, text, tags FROM omni.v_events WHERE $__timeFilter(time) "
                        "AND (benchmark = '$benchmark' OR benchmark IS NULL) AND "
                        "grafana_annotation_id IS NULL ORDER BY time",
                        fmt="table",
                    ),
                }
            ]
        },
        "panels": panels(policy.slo_tail),
    }


def dashboards() -> dict[str, JsonObject]:
    """File name → dashboard JSON, for every dashboard the project ships."""
    return {"omni-seed-tts-trend.json": trend_dashboard()}


def render(d: JsonObject) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_all(out_dir: Path = DASHBOARD_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {out_dir / name: d for name, d in dashboards().items()}
    for path, d in written.items():
        path.write_text(render(d), encoding="utf-8")
    return list(written)
