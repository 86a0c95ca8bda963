"""A fleet night at a year's volume: does the night's cost grow with history?

3 lanes × 6 series (Qwen3-Omni and MiniCPM-o × seed-TTS en 1,088, seed-TTS zh 2,020 and
Daily-Omni 1,197 items), 2 branches each (~52k item rows a night). A first week of nights runs
through the platform's own functions, per series as the nightly DAG's units call them (store
the runs, summarize, decide with alert plans), then the reports and alert delivery once;
every baseline run also carries upstream's verdicts, as an import would, for the fleet panel.
The week is then copied back in time, server-side, into a year of history (real rows: runs,
items, gradings, statistics, item sets, comparisons, decisions, the ledger's nights). Printed:

- `decide` per series for the same night with a week of history and then with a year
  (goal ≤ 1.2×);
- a fleet night with a year of history: wall time per series against warm one-series nights
  of each benchmark measured in the same run on the same database (goal ≤ 1.1× linear);
- the peak RSS of summarize and decide (each stage runs in a forked child, whose own peak
  the kernel reports);
- the fleet overview panel's p95 at a year's volume (goal < 100 ms), beside the view before
  migration 0020 (a scan of every decision and imported run) on the same data.

    .venv/bin/python bench/bench_fleet_year.py [--weeks 52] [--reps 3] [--lanes 3] [--scale 1]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import io
import json
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from artifacts import ABShape, ab_artifacts, parse_artifact
from common import p95, scratch_db
from psycopg.rows import dict_row

from omni_tasks.alerts.slack import default_sink, dispatch
from omni_tasks.benchmarks.seed_tts.artifact import ARTIFACT_GRADER
from omni_tasks.config import get_settings
from omni_tasks.deployment.schema import NightlyParams
from omni_tasks.gates.policy import load_policy
from omni_tasks.jobs import nightly
from omni_tasks.jobs.decide import decide_fleet
from omni_tasks.store.queries import sql
from omni_tasks.store.runs import save_run

MODELS = ["Qwen/Qwen3-Omni-30B-A3B-Instruct", "openbmb/MiniCPM-o-4_5"]
ITEMS = {"seed_tts_en": 1088, "seed_tts_zh": 2020, "daily_omni": 1197}
LANES = ["cuda-h100x2", "rocm-mi300", "npu-a3"]
FIRST = dt.date(2026, 11, 1)
WEEK = 7
UPSTREAM = {"upstream_gates": [{"metric": "seed_tts_content_error_mean", "verdict": "pass"}]}

# The fleet overview before migration 0020: every decision and imported run, every time.
OLD_PANEL = """
WITH ours AS (
    SELECT DISTINCT ON (benchmark, model, lane, candidate_branch, variant)
           benchmark, model, lane, candidate_branch, baseline_branch, variant, nightly, verdict,
           confirmed
    FROM omni.gate_decision
    ORDER BY benchmark, model, lane, candidate_branch, variant, nightly DESC, decision_id DESC
), failing AS (
    SELECT benchmark, model, lane, candidate_branch, variant,
           count(*) FILTER (WHERE verdict = 'REGRESSED') AS regressed_nights_14d
    FROM omni.gate_decision
    WHERE nightly > (SELECT max(nightly) FROM omni.gate_decision) - 14
    GROUP BY benchmark, model, lane, candidate_branch, variant
)
SELECT coalesce(o.benchmark, u.benchmark) AS benchmark, coalesce(o.model, u.model) AS model,
       coalesce(o.lane, u.lane) AS lane, o.candidate_branch, coalesce(o.variant, u.variant),
       o.nightly, o.verdict, coalesce(f.regressed_nights_14d, 0) AS regressed_14d,
       u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d, u.upstream_fail_streak,
       u.validity, u.blocking, u.sku
FROM ours o
FULL OUTER JOIN omni.v_fleet_upstream u
    ON (u.benchmark, u.model, u.lane, u.variant) = (o.benchmark, o.model, o.lane, o.variant)
LEFT JOIN failing f ON (f.benchmark, f.model, f.lane, f.candidate_branch, f.variant)
    = (o.benchmark, o.model, o.lane, o.candidate_branch, o.variant)
ORDER BY 1, 2, 3, 4
"""


def fleet(lanes: int) -> list[NightlyParams]:
    return [
        NightlyParams(
            benchmark=b,
            server={"model": m},
            lane=lane,
            branches=["main", "rebase"],
            baseline="main",
            targets={"main": "simulator:main", "rebase": "simulator:rebase"},
            transcript_mode=True,
        )
        for lane in LANES[:lanes]
        for m in MODELS
        for b in ITEMS
    ]


def artifacts(tmp: Path, scale: float) -> dict[str, list[Any]]:
    """Each benchmark's baseline and candidate artifacts at its real item count (× `scale`; a
    quiet A/B: seed-TTS's 1,088-clip layout scaled)."""
    out = {}
    for bench, real in ITEMS.items():
        n = max(20, round(real * scale))
        k = n / 1088
        shape = ABShape(n, int(80 * k), int(12 * k), int(10 * k))
        arts = []
        for branch, doc in zip(("main", "rebase"), ab_artifacts(shape, seed=n), strict=True):
            path = tmp / f"{bench}_{branch}.json"
            path.write_text(json.dumps(doc))
            arts.append(parse_artifact(path, branch=branch, nightly=FIRST))
        out[bench] = arts
    return out


def store(conn: psycopg.Connection[Any], p: NightlyParams, arts: list[Any], when: dt.date) -> None:
    for art in arts:
        grades = art.grades
        if p.bench == "daily_omni":  # answers, right or wrong, not transcripts
            grades = [
                dataclasses.replace(g, incorrect=(g.wer or 0) > 0.5, wer=None) for g in grades
            ]
        upstream = UPSTREAM if art.spec.branch == "main" else {}
        spec = dataclasses.replace(
            art.spec,
            benchmark=p.bench,
            model=p.series.model,
            lane=p.lane,
            nightly=when,
            source={**art.spec.source, **upstream},
        )
        save_run(conn, spec, art.clips, (ARTIFACT_GRADER, grades))


def in_child(dsn: str, stage: Callable[[psycopg.Connection[Any]], Any]) -> tuple[float, float]:
    """(seconds, the child's peak RSS in MiB) of `stage` run in a forked child on its own
    connection (a connection is never shared across a fork)."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            with psycopg.connect(dsn, row_factory=dict_row) as conn:
                with contextlib.redirect_stdout(io.StringIO()):
                    stage(conn)
                conn.commit()
        except BaseException:  # reported by the exit status
            import traceback

            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"stage failed in the child (exit {status})")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024


def night(
    dsn: str, conn: psycopg.Connection[Any], series: list[NightlyParams], arts: Any, when: dt.date
) -> dict[str, tuple[float, float]]:
    """One night as the DAG runs it: each series' unit (store, summarize, decide), then the
    reports and alert delivery. Each stage's (seconds, peak RSS MiB)."""
    policy = load_policy()
    t0 = time.perf_counter()
    for p in series:
        store(conn, p, arts[p.bench], when)
    conn.commit()
    stages = {"store the runs": (time.perf_counter() - t0, 0.0)}

    def summarize(c: psycopg.Connection[Any]) -> None:
        for p in series:  # the units, one after another (a 2-core machine)
            nightly.summarize_night(c, [p], when, policy)

    def decide(c: psycopg.Connection[Any]) -> None:
        for p in series:
            assert not decide_fleet(c, when, policy, [p]).failed

    def outputs(c: psycopg.Connection[Any]) -> None:
        nightly.refresh_outputs(c, [p.series for p in series], when, policy.primary_tau)
        dispatch(c, default_sink())

    stages["summarize"] = in_child(dsn, summarize)
    stages["decide (with alert plans)"] = in_child(dsn, decide)
    stages["reports + dashboards + alerts"] = in_child(dsn, outputs)
    return stages


def decide_each(dsn: str, series: list[NightlyParams], when: dt.date, reps: int) -> list[float]:
    """Seconds to decide each series' night again (the median of `reps`, in one child)."""
    policy = load_policy()

    def run(c: psycopg.Connection[Any]) -> None:
        out = []
        for p in series:
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter()
                decide_fleet(c, when, policy, [p])
                c.commit()
                samples.append(time.perf_counter() - t0)
            out.append(statistics.median(samples))
        Path(os.environ["OMNI_HOME"], "decide.json").write_text(json.dumps(out))

    in_child(dsn, run)
    return list(json.loads(Path(os.environ["OMNI_HOME"], "decide.json").read_text()))


def _columns(conn: psycopg.Connection[Any], table: str) -> list[tuple[str, bool]]:
    rows = conn.execute(
        "SELECT column_name, is_identity = 'YES' AS identity FROM information_schema.columns "
        "WHERE table_schema = 'omni' AND table_name = %s AND is_generated = 'NEVER' "
        "ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [(r["column_name"], r["identity"]) for r in rows]


def _copy(
    conn: psycopg.Connection[Any], table: str, joins: str, new: dict[str, str], alias: str = "t"
) -> None:
    """INSERT every row of `table` joined by `joins` again, with `new` column expressions;
    identity columns not in `new` take fresh values."""
    cols = [(c, i) for c, i in _columns(conn, table) if c in new or not i]
    names = ", ".join(c for c, _ in cols)
    values = ", ".join(new.get(c, f"{alias}.{c}") for c, _ in cols)
    conn.execute(
        f"INSERT INTO omni.{table} ({names}) OVERRIDING SYSTEM VALUE "
        f"SELECT {values} FROM omni.{table} {alias} {joins}"
    )


def grow_history(conn: psycopg.Connection[Any], weeks: int) -> int:
    """The first week copied `weeks` times further back (week k shifted 7k days); the item
    rows now on record."""
    last = FIRST + dt.timedelta(days=WEEK - 1)
    with conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE shift AS SELECT k, 7 * k AS days FROM generate_series(1, %s) k",
            (weeks,),
        )
        conn.execute(
            "CREATE TEMP TABLE run_map AS SELECT r.run_id AS old, s.k, "
            "nextval(pg_get_serial_sequence('omni.run', 'run_id')) AS new "
            "FROM omni.run r, shift s WHERE r.nightly BETWEEN %s AND %s",
            (FIRST, last),
        )
        conn.execute(
            "CREATE TEMP TABLE grading_map AS SELECT g.grading_id AS old, m.k, "
            "nextval(pg_get_serial_sequence('omni.grading', 'grading_id')) AS new "
            "FROM omni.grading g JOIN run_map m ON m.old = g.run_id"
        )
        conn.execute(
            "CREATE TEMP TABLE comparison_map AS SELECT c.comparison_id AS old, m.k, "
            "nextval(pg_get_serial_sequence('omni.comparison', 'comparison_id')) AS new "
            "FROM omni.comparison c JOIN grading_map m ON m.old = c.candidate_grading_id"
        )
        conn.execute(
            "CREATE TEMP TABLE ledger_map AS SELECT n.night_id AS old, m.k, "
            "nextval(pg_get_serial_sequence('omni.ledger_night', 'night_id')) AS new "
            "FROM omni.ledger_night n JOIN run_map m ON m.old = n.run_id"
        )
        for t in ("run_map", "grading_map", "comparison_map", "ledger_map"):
            conn.execute(f"CREATE INDEX ON {t} (old, k)")
        _copy(
            conn,
            "run",
            "JOIN run_map m ON m.old = t.run_id JOIN shift s ON s.k = m.k",
            {
                "run_id": "m.new",
                "run_key": "t.run_key || ':y' || s.k",
                "nightly": "t.nightly - s.days",
            },
        )
        _copy(
            conn,
            "grading",
            "JOIN grading_map g ON g.old = t.grading_id "
            "JOIN run_map m ON m.old = t.run_id AND m.k = g.k",
            {"grading_id": "g.new", "run_id": "m.new"},
        )
        _copy(conn, "clip_audio", "JOIN run_map m ON m.old = t.run_id", {"run_id": "m.new"})
        _copy(
            conn,
            "clip_grade",
            "JOIN grading_map g ON g.old = t.grading_id",
            {"grading_id": "g.new"},
        )
        for table in ("run_stats", "item_set"):
            _copy(
                conn, table, "JOIN grading_map g ON g.old = t.grading_id", {"grading_id": "g.new"}
            )
        _copy(
            conn,
            "comparison",
            "JOIN comparison_map c ON c.old = t.comparison_id "
            "JOIN grading_map b ON b.old = t.baseline_grading_id AND b.k = c.k "
            "JOIN grading_map g ON g.old = t.candidate_grading_id AND g.k = c.k",
            {
                "comparison_id": "c.new",
                "baseline_grading_id": "b.new",
                "candidate_grading_id": "g.new",
            },
        )
        _copy(
            conn,
            "gate_decision",
            "JOIN comparison_map c ON c.old = t.comparison_id "
            "JOIN shift s ON s.k = c.k "
            "JOIN run_map a ON a.old = t.candidate_run_id AND a.k = c.k "
            "JOIN run_map b ON b.old = t.baseline_run_id AND b.k = c.k",
            {
                "nightly": "t.nightly - s.days",
                "comparison_id": "c.new",
                "candidate_run_id": "a.new",
                "baseline_run_id": "b.new",
            },
        )
        # The ledger's nights, as each night's report left them: without them the first
        # report after the copy would read 28 nights of clip records a series.
        _copy(
            conn,
            "ledger_night",
            "JOIN ledger_map l ON l.old = t.night_id JOIN shift s ON s.k = l.k "
            "JOIN run_map m ON m.old = t.run_id AND m.k = l.k "
            "JOIN grading_map g ON g.old = t.grading_id AND g.k = l.k",
            {
                "night_id": "l.new",
                "nightly": "t.nightly - s.days",
                "run_id": "m.new",
                "grading_id": "g.new",
            },
        )
        for table in ("item_night", "ledger_state"):
            _copy(conn, table, "JOIN ledger_map l ON l.old = t.night_id", {"night_id": "l.new"})
        for t in ("shift", "run_map", "grading_map", "comparison_map", "ledger_map"):
            conn.execute(f"DROP TABLE {t}")
    settle(conn)
    return int(conn.execute("SELECT count(*) AS n FROM omni.clip_grade").fetchone()["n"])


def settle(conn: psycopg.Connection[Any]) -> None:
    """VACUUM (ANALYZE) every table, as nightly maintenance leaves a history: its rows visible
    to all and no autovacuum pass over the new rows left to compete with a timing."""
    conn.commit()
    conn.autocommit = True
    try:
        conn.execute("VACUUM (ANALYZE)")
    finally:
        conn.autocommit = False


def panel(conn: psycopg.Connection[Any], query: str, reps: int = 30) -> float:
    conn.execute(query).fetchall()  # warm
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        conn.execute(query).fetchall()
        samples.append(time.perf_counter() - t0)
    return p95(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weeks", type=int, default=52, help="weeks of history copied back")
    ap.add_argument("--reps", type=int, default=3, help="decides per series per measurement")
    ap.add_argument("--lanes", type=int, default=3, choices=range(1, len(LANES) + 1))
    ap.add_argument("--scale", type=float, default=1.0, help="× the real item counts")
    args = ap.parse_args()
    series = fleet(args.lanes)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OMNI_HOME"] = tmp
        get_settings.cache_clear()
        arts = artifacts(Path(tmp), args.scale)
        with scratch_db() as conn:
            dsn = conn.info.dsn
            t0 = time.perf_counter()
            for i in range(WEEK):
                night(dsn, conn, series, arts, FIRST + dt.timedelta(days=i))
            items = sum(len(arts[p.bench][0].clips) + len(arts[p.bench][1].clips) for p in series)
            print(
                f"a week of {len(series)} series ({args.lanes} lanes × {len(MODELS)} models × "
                f"{len(ITEMS)} benchmarks, {items:,} item rows a night) in "
                f"{time.perf_counter() - t0:.0f} s"
            )
            last = FIRST + dt.timedelta(days=WEEK - 1)
            settle(conn)
            week = decide_each(dsn, series, last, args.reps)
            t0 = time.perf_counter()
            rows = grow_history(conn, args.weeks)
            nights = WEEK * (args.weeks + 1)
            print(
                f"history: {nights} nights, {rows:,} item rows ({time.perf_counter() - t0:.0f} s)"
            )
            year = decide_each(dsn, series, last, args.reps)
            ratios = [y / w for y, w in zip(year, week, strict=True)]
            print(
                f"decide per series, the same night: a week of history {statistics.median(week):.2f} s, "
                f"{nights} nights {statistics.median(year):.2f} s (median); per series "
                f"{min(ratios):.2f}–{max(ratios):.2f}×, median {statistics.median(ratios):.2f}× "
                f"(goal ≤ 1.2×: {'met' if statistics.median(ratios) <= 1.2 else 'MISSED'})"
            )

            # The baseline: a warm one-series night of each benchmark (one model, one lane),
            # each on its own; the fleet is 18 series, 6 of each, so linear is 6× their sum.
            singles = [p for p in series if p.series.model == MODELS[0] and p.lane == LANES[0]]
            nxt = last + dt.timedelta(days=1)
            one: dict[str, tuple[float, float]] = {}
            for day in (nxt, nxt + dt.timedelta(days=1)):  # the first pass warms the path
                one = {}
                for p in singles:
                    for name, (sec, rss) in night(dsn, conn, [p], arts, day).items():
                        one[name] = (one.get(name, (0.0, 0.0))[0] + sec, max(rss, 0.0))
            many = night(dsn, conn, series, arts, nxt + dt.timedelta(days=2))
            scale = len(series) / len(singles)
            base = scale * sum(sec for sec, _ in one.values())
            total = sum(sec for sec, _ in many.values())
            n = len(series)
            print(
                f"fleet night with {nights} nights of history: {n} series against warm "
                "one-series nights of each benchmark (platform only: no synthesis, no ASR)"
            )
            for name, (sec, rss) in many.items():
                mem = f"   peak RSS {rss:6.0f} MiB" if rss else ""
                ratio = sec / max(scale * one[name][0], 1e-9)
                print(f"  {name:32} {sec:7.2f} s ({ratio:4.2f}× linear){mem}")
            per = total / base
            print(
                f"  {'total':32} {total:7.2f} s = {total / n:.2f} s per series; linear from "
                f"the one-series nights {base:.2f} s → {per:.2f}× linear "
                f"(goal ≤ 1.1×: {'met' if per <= 1.1 else 'MISSED'})"
            )

            new, old = panel(conn, sql("fleet_overview")), panel(conn, OLD_PANEL)
            print(
                f"fleet overview panel p95 at {nights} nights: {new * 1000:.1f} ms "
                f"(goal < 100 ms: {'met' if new < 0.1 else 'MISSED'}); the view before 0020 "
                f"{old * 1000:.1f} ms on the same data ({old / new:.0f}× the maintained table)"
            )
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"this process's own peak RSS (stores the runs): {peak:.0f} MiB")


if __name__ == "__main__":
    main()
