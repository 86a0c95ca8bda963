"""A year of the fleet's history synced from Buildkite: N nights (default 365) of the three
upstream pipelines on a local Buildkite API (the real REST shapes: paginated builds with jobs,
artifacts, downloads redirected to storage), six artifacts a night — CUDA: Qwen3-Omni seed-TTS
and Daily-Omni, MiniCPM-o seed-TTS zh, the DuplexEval summary; AMD: seed-TTS; NPU: MiniCPM-o
zh — through `import_pipeline` (rules, upstream verdicts, validity, INFRA alerts). The
baseline, measured in the same run on the same database, is the single-artifact import
(`omni-tasks import`: read, parse, save) of the same files; both as stored rows per second,
the sync's as a ratio to it. Then the fleet overview panel's query (and the report's) at that
size: p95 over repeated runs.

    .venv/bin/python bench/bench_fleet_history.py [--nights 365] [--items 40]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import p95, scratch_db
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the local Buildkite API

from omni_tasks import benchmarks
from omni_tasks.benchmarks.base import ImportOptions
from omni_tasks.benchmarks.duplex_eval import PROTOCOL_PIN
from omni_tasks.grafana.dashboards import trend_dashboard
from omni_tasks.importers.buildkite import BuildkiteSource, import_pipeline, load_rules
from omni_tasks.store.runs import save_run
from omni_tasks.store.views import fleet_overview
from omni_tasks.synthesis.simulator import serve_in_thread
from tests.fakes.buildkite_api import STORAGE_HOSTS, BuildkiteState, buildkite_app
from tests.fakes.buildkite_fleet import DUPLEX_DIR, MINICPM_DIR, QWEN_DIR, add
from tests.fakes.grafana_api import expand, panel_queries

FIRST = dt.date(2025, 12, 1)
ROOT = Path(__file__).resolve().parents[1]
# Upstream's real artifact names (the shared runner's, per folder).
PIPELINES = {
    "vllm-omni": [
        f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{{stamp}}.json",
        f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{{stamp}}.json",
        f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{{stamp}}.json",
        f"{DUPLEX_DIR}/summary.json",
    ],
    "vllm-omni-amd": [
        f"{QWEN_DIR}/qwen_omni_acc_seed_tts_{{stamp}}.json",
        f"{QWEN_DIR}/qwen_omni_acc_daily_omni_{{stamp}}.json",
    ],
    "vllm-omni-npu-ci": [f"{MINICPM_DIR}/qwen_omni_acc_seed_tts_{{stamp}}.json"],
}


def document(path: str, night: int, stamp: str, items: int) -> dict[str, Any]:
    """The artifact at `path` on night `night`: a wobble in its figures so nights differ."""
    if "duplex" in path:
        return {
            "protocol_pin": PROTOCOL_PIN,
            "samples": 66,
            "rtd": {"mean_content_score": 1.0 + (night % 7) / 10, "mean_avg_temporal_score": 2.2},
            "pr": {"samples": 36, "mean_all_success": 0.2 + (night % 5) / 50},
        }
    if "daily_omni" in path:
        rows = [
            {
                "request_id": str(i),
                "video_id": f"v{i}",
                "task_type": "Reasoning",
                "gold": "A",
                "predicted": "A" if (i + night) % 4 else "B",
                "correct": bool((i + night) % 4),
            }
            for i in range(items)
        ]
        acc = sum(r["correct"] for r in rows) / items
        return {"date": stamp, "daily_omni_accuracy": acc, "daily_omni_eval_items": rows}
    zh = "minicpmo" in path
    wers = [0.0 if (i + night) % 9 else 0.5 for i in range(items)]
    seed = [
        {
            "utterance_id": f"{'z' if zh else 'u'}{i}",
            "locale": "zh" if zh else "en",
            "wer": w,
            "reference_raw": "你好世界" if zh else f"Sentence number {i}.",
            "asr_raw": ("你好" if w else "你好世界") if zh else f"sentence number {i}",
            **({"sim": 0.72} if zh else {}),
        }
        for i, w in enumerate(wers)
    ]
    return {
        "date": stamp,
        "seed_tts_content_error_mean": sum(wers) / items,
        "seed_tts_content_evaluated": items,
        "seed_tts_wer_eval_items": seed,
    }


def fleet_state(nights: int, items: int, url: str, state: BuildkiteState) -> None:
    """The nights' builds and artifacts, put on the local API's state."""
    for pipeline, paths in PIPELINES.items():
        for n in range(nights):
            day = FIRST + dt.timedelta(days=n)
            stamp = f"{day:%Y%m%d}-021500"
            files = {
                path: document(path, n, stamp, items)
                for path in (t.format(stamp=stamp) for t in paths)
            }
            add(state, url, pipeline, n + 1, files, f"{day.isoformat()}T01:00:00.000Z")


def stored_rows(conn: Any) -> int:
    return sum(
        conn.execute(f"SELECT count(*) AS n FROM omni.{t}").fetchone()["n"]
        for t in ("run", "clip_audio", "clip_grade")
    )


def single_imports(conn: Any, state: BuildkiteState, sample: int) -> tuple[float, int]:
    """`omni-tasks import` of `sample` of the same artifacts, one file at a time."""
    before = stored_rows(conn)
    keys = [k for k in state.blobs if k.startswith("vllm-omni-")][:sample]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for aid in keys:
            path = Path(tmp) / f"{aid}.json"
            path.write_bytes(state.blobs[aid])
            parsed = benchmarks.import_artifact(
                path, ImportOptions(branch="single", built=FIRST), None
            )
            grading = (parsed.grader, parsed.grades) if parsed.clips else None
            save_run(conn, parsed.spec, parsed.clips, grading, run_key=f"single-{aid}")
            conn.commit()
    return time.perf_counter() - t0, stored_rows(conn) - before


def raw_copy(conn: Any) -> tuple[float, float, int]:
    """The baselines the sync is held to: a raw COPY of the clip rows it stored, into tables of
    the same shape and indexes, timed alone — from Python tuples (`write_row`, the values as
    the sync holds them) and from COPY text already rendered (the database alone)."""
    columns = {  # the columns the sync's own COPY writes (sql/queries/copy_clip_*.sql)
        table: (ROOT / "sql" / "queries" / f"copy_{table}.sql")
        .read_text()
        .split("(", 1)[1]
        .split(")", 1)[0]
        for table in ("clip_audio", "clip_grade")
    }
    tuples, text, rows = {}, {}, 0
    with conn.cursor(row_factory=tuple_row) as cur:
        for table, cols in columns.items():
            tuples[table] = cur.execute(f"SELECT {cols} FROM omni.{table}").fetchall()
            rows += len(tuples[table])
            with cur.copy(f"COPY (SELECT {cols} FROM omni.{table}) TO STDOUT") as cp:
                text[table] = b"".join(bytes(b) for b in cp)
            for kind in ("tuples", "text"):
                cur.execute(f"CREATE TEMP TABLE {kind}_{table} (LIKE omni.{table} INCLUDING ALL)")
        conn.commit()
        t0 = time.perf_counter()
        for table, values in tuples.items():
            with cur.copy(f"COPY tuples_{table} ({columns[table]}) FROM STDIN") as cp:
                for row in values:  # a jsonb column's dict goes as Jsonb, as the sync sends it
                    cp.write_row(tuple(Jsonb(v) if isinstance(v, dict) else v for v in row))
        conn.commit()
        t1 = time.perf_counter()
        for table, blob in text.items():
            with cur.copy(f"COPY text_{table} ({columns[table]}) FROM STDIN") as cp:
                cp.write(blob)
        conn.commit()
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--items", type=int, default=40, help="items per per-item artifact")
    ap.add_argument("--single", type=int, default=60, help="artifacts in the baseline")
    ap.add_argument("--repeat", type=int, default=20, help="panel query runs for the p95")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = ap.parse_args()
    if args.nights < 1 or args.items < 1:
        ap.error("--nights and --items must be at least 1")

    state = BuildkiteState()
    with serve_in_thread(buildkite_app(state, page_size=100)) as url, scratch_db() as conn:
        fleet_state(args.nights, args.items, url, state)
        artifacts = len(state.blobs)
        single_s, single_rows = single_imports(conn, state, min(args.single, artifacts))
        single_n = min(args.single, artifacts)
        conn.execute("DELETE FROM omni.run WHERE branch = 'single'")  # clips cascade
        conn.commit()

        # The shipped rules, each per-item suite expecting the bench's item count (so a night is
        # valid, as a real night at full size is: no INFRA alert per artifact).
        rules = tuple(
            r if r.benchmark == "duplex_eval" else r.model_copy(update={"expected": args.items})
            for r in load_rules()
        )
        t0 = time.perf_counter()
        imported = 0
        for pipeline in PIPELINES:
            src = BuildkiteSource(
                "vllm",
                pipeline,
                state.token,
                f"{url}/v2",
                backoff_s=0.01,
                artifact_hosts=STORAGE_HOSTS,
                rules=rules,
            )
            report = import_pipeline(conn, src)
            assert not report.invalid and not report.refused, report
            imported += len(report.imported)
        sync_s = time.perf_counter() - t0
        sync_rows = stored_rows(conn)
        copy_s, text_s, copy_rows = raw_copy(conn)

        query = panel_queries(trend_dashboard())[
            "Fleet overview: every series' latest verdict, ours and upstream's/A"
        ]
        sql = expand(query, {}, "2025-12-01T00:00:00Z", "2026-12-31T00:00:00Z")
        panel, report_q = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            rows = conn.execute(sql).fetchall()
            panel.append(time.perf_counter() - t)
            t = time.perf_counter()
            fleet_overview(conn)
            report_q.append(time.perf_counter() - t)

    single_rate = single_rows / single_s
    sync_rate = sync_rows / sync_s
    copy_rate = copy_rows / copy_s
    text_rate = copy_rows / text_s
    figures = {
        "nights": args.nights,
        "artifacts": artifacts,
        "imported_runs": imported,
        "stored_rows": sync_rows,
        "sync_wall_s": round(sync_s, 2),
        "sync_rows_per_s": round(sync_rate),
        "single_artifact_import": {"artifacts": single_n, "rows_per_s": round(single_rate)},
        "ratio_sync_to_single_rows_per_s": round(sync_rate / single_rate, 3),
        "raw_copy_rows_per_s": round(copy_rate),
        "ratio_sync_to_raw_copy": round(sync_rate / copy_rate, 3),
        "raw_copy_of_rendered_text_rows_per_s": round(text_rate),
        "fleet_panel_rows": len(rows),
        "fleet_panel_p95_ms": round(1000 * p95(panel), 2),
        "fleet_report_query_p95_ms": round(1000 * p95(report_q), 2),
    }
    print(
        f"{args.nights} nights, {artifacts} artifacts → {imported} runs, {sync_rows} rows in "
        f"{sync_s:.1f} s: {sync_rate:,.0f} rows/s; single-artifact import {single_rate:,.0f} "
        f"rows/s; ratio sync / single-artifact import {sync_rate / single_rate:.2f}"
    )
    print(
        f"raw COPY of the same clip rows from Python tuples {copy_rate:,.0f} rows/s (of "
        f"rendered COPY text {text_rate:,.0f} rows/s); ratio sync / raw COPY "
        f"{sync_rate / copy_rate:.2f}"
    )
    print(
        f"fleet overview panel ({len(rows)} rows) p95 {1000 * p95(panel):.1f} ms; the report's "
        f"fleet query p95 {1000 * p95(report_q):.1f} ms"
    )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
