"""Scale: fleet history at growing sizes; panel and gate query latency p50/p95 at each size.

A fleet of 3 benchmarks × 4 branches × 2 variants × 2 seeds × 1088 clips (48 runs, ~52k clips
a night) is generated night by night server-side (generate_series, realistic WER mix, run
statistics, paired comparisons with their regressed clips, gate decisions, events) until each
size is reached; then every dashboard panel query (90-day window, all branches and variants)
and the gate's data load (one night's runs, then both gradings' clip records) are timed.

    .venv/bin/python bench/bench_scale.py                      # 0.25 M, 0.5 M, 1 M clip rows
    .venv/bin/python bench/bench_scale.py --sizes 1e6 1e7 3e7  # the fleet-scale curve

Prints p50/p95 per query and size, and each size's p95 against the smallest size's (growth).
Goal: every panel p95 < 200 ms at the largest size. Not a timed test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

from common import p95, scratch_db

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # Grafana's query expansion

from omni_tasks.grafana.dashboards import trend_dashboard
from omni_tasks.series import DEFAULT_LANE, DEFAULT_MODEL, Series
from omni_tasks.store.queries import sql
from tests.fakes.grafana_api import expand, panel_queries

BENCHMARKS = ["seed_tts_en", "seed_tts_zh", "seed_tts_hard"]
BRANCHES = ["main", "rebase", "dev", "release"]
VARIANTS = ["default", "eager"]
SEEDS = [1, 2]
CLIPS = 1088
PER_NIGHT = len(BENCHMARKS) * len(BRANCHES) * len(VARIANTS) * len(SEEDS) * CLIPS  # clip rows
START = dt.date(2025, 1, 1)

NIGHT_SQL = """
WITH runs AS (
    INSERT INTO omni.run (run_key, benchmark, nightly, branch, variant, seed, trigger, status,
                          n_expected, config_hash, content_hash, dataset_fingerprint,
                          prompt_fingerprint, execution_fingerprint, stack)
    SELECT format('%%s:%%s:%%s:%%s:seed%%s', b, %(night)s::date, br, v, s), b, %(night)s, br, v,
           s, 'nightly', 'complete', 1088, '', '', 'ds', 'p', 'x', '{}'
    FROM unnest(%(benchmarks)s::text[]) b, unnest(%(branches)s::text[]) br,
         unnest(%(variants)s::text[]) v, unnest(%(seeds)s::int[]) s
    RETURNING run_id
), grades AS (
    INSERT INTO omni.grading (run_id, grader_id) SELECT run_id, 'bench' FROM runs
    RETURNING grading_id, run_id
), audio AS (
    INSERT INTO omni.clip_audio (run_id, utt_id, ordinal, reference_text, synth_status,
                                 audio_uri, audio_seconds, thinker_text)
    SELECT g.run_id, 'u' || i, i, 'reference sentence number ' || i, 'ok',
           'file:///audio/' || g.run_id || '/' || i || '.wav', 3.5, 'reference sentence number ' || i
    FROM grades g, generate_series(0, 1087) i
)
INSERT INTO omni.clip_grade (grading_id, utt_id, grade_status, hypothesis, ref_words, hyp_words,
                             wer, thinker_wer, is_question)
SELECT g.grading_id, 'u' || i, 'graded', 'heard ' || i, 4,
       CASE WHEN x < 0.08 THEN 12 ELSE 4 END,
       CASE WHEN x < 0.08 THEN 1.0 + 5 * abs(x) ELSE (CASE WHEN x < 0.2 THEN 0.25 ELSE 0 END) END,
       0, i %% 4 = 0
FROM grades g, generate_series(0, 1087) i,
     LATERAL (SELECT random() + (CASE WHEN i %% 50 = 0 THEN -0.5 ELSE 0 END) AS x) r
"""

STATS_SQL = """
INSERT INTO omni.run_stats (grading_id, tau, policy_version, n_expected, n_scored, n_failed,
    n_infra, coverage, mean_wer, median_wer, capped_mean_wer, tail_fraction, tail_ci_low,
    tail_ci_high, stats)
SELECT g.grading_id, t.tau, 'bench', 1088, count(*), 0, 0, 1.0, avg(c.wer), 0,
       avg(least(c.wer, 1)), avg((c.wer > t.tau)::int), avg((c.wer > t.tau)::int) * 0.8,
       avg((c.wer > t.tau)::int) * 1.2,
       jsonb_build_object(
           'n_broken', sum((c.wer > t.tau)::int),
           'failure_modes', jsonb_build_object(
               'over_generation', jsonb_build_object('clips', sum((c.wer > t.tau AND c.hyp_words >= 8)::int)),
               'garbled', jsonb_build_object('clips', sum((c.wer > t.tau AND c.hyp_words < 8)::int)),
               'truncated', jsonb_build_object('clips', 0), 'no_output', jsonb_build_object('clips', 0)),
           'origins', jsonb_build_object('talker', sum((c.wer > t.tau)::int), 'thinker', 0, 'unknown', 0),
           'questions', jsonb_build_object('tail_fraction', avg((c.wer > t.tau)::int) FILTER (WHERE c.is_question),
                                           'n_broken', sum((c.wer > t.tau)::int) FILTER (WHERE c.is_question)),
           'statements', jsonb_build_object('tail_fraction', avg((c.wer > t.tau)::int) FILTER (WHERE NOT c.is_question),
                                            'n_broken', sum((c.wer > t.tau)::int) FILTER (WHERE NOT c.is_question)))
FROM omni.grading g JOIN omni.run r USING (run_id) JOIN omni.clip_grade c USING (grading_id),
     (VALUES (0.5::float8), (1.0::float8)) t (tau)
WHERE r.nightly = %(night)s
GROUP BY g.grading_id, t.tau
"""

COMPARE_SQL = """
WITH pairs AS (
    SELECT b.benchmark, b.variant, b.seed, gb.grading_id AS bg, gc.grading_id AS cg,
           c.branch AS candidate, b.run_id AS brun, c.run_id AS crun
    FROM omni.run b JOIN omni.grading gb ON gb.run_id = b.run_id
    JOIN omni.run c ON c.benchmark = b.benchmark AND c.nightly = b.nightly
         AND c.variant = b.variant AND c.seed = b.seed AND c.branch <> 'main'
    JOIN omni.grading gc ON gc.run_id = c.run_id
    WHERE b.nightly = %(night)s AND b.branch = 'main' AND b.seed = 1
), counts AS (
    SELECT p.*, count(*) FILTER (WHERE x.wer <= 0.5 AND y.wer > 0.5) AS regressed,
           count(*) FILTER (WHERE x.wer > 0.5 AND y.wer <= 0.5) AS improved,
           count(*) FILTER (WHERE x.wer > 0.5 AND y.wer > 0.5) AS stable_broken,
           jsonb_agg(x.utt_id) FILTER (WHERE x.wer <= 0.5 AND y.wer > 0.5) AS regressed_clips
    FROM pairs p JOIN omni.clip_grade x ON x.grading_id = p.bg
    JOIN omni.clip_grade y ON y.grading_id = p.cg AND y.utt_id = x.utt_id
    GROUP BY p.benchmark, p.variant, p.seed, p.bg, p.cg, p.candidate, p.brun, p.crun
), cmp AS (
    INSERT INTO omni.comparison (baseline_grading_id, candidate_grading_id, tau, policy_version,
        comparable, n_paired, stable_broken, regressed, improved, stable_ok, p_regress,
        delta_tail_fraction, delta_tail_ci_low, delta_tail_ci_high, result)
    SELECT bg, cg, 0.5, 'bench', true, 1088, stable_broken, regressed, improved,
           1088 - stable_broken - regressed - improved, 0.5, (regressed - improved) / 1088.0,
           (regressed - improved) / 1088.0 - 0.02, (regressed - improved) / 1088.0 + 0.02,
           jsonb_build_object('regressed_clips', coalesce(regressed_clips, '[]'::jsonb))
    FROM counts RETURNING comparison_id, baseline_grading_id, candidate_grading_id
)
INSERT INTO omni.gate_decision (benchmark, nightly, candidate_branch, baseline_branch, variant,
    policy_version, verdict, confirmed, mcnemar_p, mcnemar_p_holm, comparison_id,
    candidate_run_id, baseline_run_id, policy)
SELECT c.benchmark, %(night)s, c.candidate, 'main', c.variant, 'bench',
       CASE WHEN c.regressed > c.improved + 20 THEN 'REGRESSED' ELSE 'SAME' END, false, 0.5, 0.5,
       m.comparison_id, c.crun, c.brun, '{}'
FROM counts c JOIN cmp m ON m.baseline_grading_id = c.bg AND m.candidate_grading_id = c.cg
"""


def clip_rows(conn) -> int:  # type: ignore[no-untyped-def]
    return int(conn.execute("SELECT count(*) AS n FROM omni.clip_grade").fetchone()["n"])


def grow(conn, target: int, night: dt.date) -> dt.date:  # type: ignore[no-untyped-def]
    have = clip_rows(conn)
    while have + PER_NIGHT <= target:
        params = {
            "night": night,
            "benchmarks": BENCHMARKS,
            "branches": BRANCHES,
            "variants": VARIANTS,
            "seeds": SEEDS,
        }
        with conn.transaction():
            conn.execute(NIGHT_SQL, params)
            conn.execute(STATS_SQL, {"night": night})
            conn.execute(COMPARE_SQL, {"night": night})
            if night.day == 1:
                conn.execute(
                    sql("insert_event"),
                    {
                        "time": dt.datetime.combine(night, dt.time(12), dt.UTC),
                        "kind": "stack_change",
                        "benchmark": None,
                        "branch": "main",
                        "variant": None,
                        "text": "vllm bump",
                        "tags": ["stack"],
                        "details": "{}",
                        "dedup_key": f"stack|{night}",
                    },
                )
        have += PER_NIGHT
        night += dt.timedelta(days=1)
    conn.execute("ANALYZE")
    conn.commit()
    return night


def measure(conn, last: dt.date, reps: int) -> dict[str, tuple[float, float]]:  # type: ignore[no-untyped-def]
    cmp = conn.execute(
        "SELECT comparison_id FROM omni.v_latest_paired WHERE benchmark = 'seed_tts_en' "
        "AND candidate_branch = 'rebase' AND variant = 'default'"
    ).fetchone()["comparison_id"]
    variables = {
        "benchmark": "seed_tts_en",
        "model": DEFAULT_MODEL,
        "lane": DEFAULT_LANE,
        "branch": BRANCHES,
        "variant": VARIANTS,
        "tau": "0.5",
        "comparison": str(cmp),
    }
    start = (last - dt.timedelta(days=90)).isoformat() + "T00:00:00Z"
    end = last.isoformat() + "T23:59:59Z"
    queries = {
        name: expand(q, variables, start, end)
        for name, q in panel_queries(trend_dashboard()).items()
    }
    night = last - dt.timedelta(days=1)

    def gate_load() -> None:
        runs = conn.execute(
            sql("nightly_runs"), {**Series("seed_tts_en").args(), "nightly": night}
        ).fetchall()
        ids = [r["run_id"] for r in runs if r["branch"] in ("main", "rebase")][:2]
        for rid in ids:
            g = conn.execute(
                "SELECT max(grading_id) AS g FROM omni.grading WHERE run_id = %s", (rid,)
            ).fetchone()["g"]
            conn.execute(sql("clip_records"), {"grading_id": g, "run_id": rid}).fetchall()

    out = {}
    for name, q in queries.items():
        conn.execute(q).fetchall()  # warm
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            conn.execute(q).fetchall()
            samples.append(time.perf_counter() - t0)
        out[name] = (sorted(samples)[len(samples) // 2], p95(samples))
    samples = []
    gate_load()
    for _ in range(reps):
        t0 = time.perf_counter()
        gate_load()
        samples.append(time.perf_counter() - t0)
    out["gate: a night's runs + 2 gradings' clips"] = (
        sorted(samples)[len(samples) // 2],
        p95(samples),
    )
    conn.commit()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs="+", default=[2.5e5, 5e5, 1e6])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--keep", default=None, help="keep (and reuse) a database of this name")
    args = ap.parse_args()
    if min(args.sizes) < PER_NIGHT:
        ap.error(f"--sizes: the smallest is one night of the fleet, {PER_NIGHT} clip rows")
    results: dict[int, dict[str, tuple[float, float]]] = {}
    with scratch_db(args.keep) as conn:
        night = START
        for size in sorted(int(s) for s in args.sizes):
            t0 = time.perf_counter()
            night = grow(conn, size, night)
            built = time.perf_counter() - t0
            n = clip_rows(conn)
            db_mb = conn.execute(
                "SELECT pg_database_size(current_database()) / 1e6 AS mb"
            ).fetchone()["mb"]
            print(
                f"size {n / 1e6:.2f} M clip rows ({(night - START).days} nights, "
                f"{db_mb:.0f} MB; grown in {built:.0f} s)",
                flush=True,
            )
            results[n] = measure(conn, night - dt.timedelta(days=1), args.reps)
    sizes = sorted(results)
    names = list(results[sizes[0]])
    head = "".join(f"{f'{s / 1e6:.2f}M p50/p95 ms':>22}" for s in sizes)
    print(f"\n{'query':58}{head}{'p95 growth':>12}")
    worst = 0.0
    for name in names:
        cells = "".join(
            f"{1e3 * results[s][name][0]:>11.1f}/{1e3 * results[s][name][1]:<10.1f}" for s in sizes
        )
        growth = results[sizes[-1]][name][1] / max(results[sizes[0]][name][1], 1e-9)
        if not name.startswith("gate"):
            worst = max(worst, results[sizes[-1]][name][1])
        print(f"{name[:57]:58}{cells}{growth:>11.1f}x")
    print(
        f"\nworst panel p95 at {sizes[-1] / 1e6:.2f} M clip rows: {1e3 * worst:.1f} ms "
        f"(goal < 200 ms: {'met' if worst < 0.2 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
