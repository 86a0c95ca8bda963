-- The fleet's upstream side per series: each imported night's own gate verdict and validity
-- (v_upstream_night), and per series the newest one with the nights it failed in the last 14
-- and its run of consecutive failures (v_fleet_upstream). Upstream's gates flap per lane;
-- these are the two figures maintainers triage by.
CREATE VIEW omni.v_upstream_night AS
SELECT r.run_id, r.run_key, r.benchmark, r.model, r.lane, r.branch, r.nightly,
       CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                         WHERE g ->> 'verdict' = 'fail') THEN 'fail'
            WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                         WHERE g ->> 'verdict' = 'not_evaluated') THEN 'not evaluated'
            ELSE 'pass' END AS upstream_verdict,
       coalesce(r.source -> 'validity', '[]'::jsonb) AS validity
FROM omni.run r
WHERE jsonb_typeof(r.source -> 'upstream_gates') = 'array'
  AND jsonb_array_length(r.source -> 'upstream_gates') > 0;

CREATE VIEW omni.v_fleet_upstream AS
WITH n AS (
    SELECT u.*,
           row_number() OVER w AS k,
           max(nightly) OVER (PARTITION BY benchmark, model, lane) AS newest_nightly
    FROM omni.v_upstream_night u
    WINDOW w AS (PARTITION BY benchmark, model, lane ORDER BY nightly DESC, run_id DESC)
), record AS (
    SELECT benchmark, model, lane,
           count(DISTINCT nightly) FILTER (WHERE upstream_verdict = 'fail'
                                           AND nightly > newest_nightly - 14)
               AS upstream_failing_14d,
           coalesce(min(k) FILTER (WHERE upstream_verdict <> 'fail') - 1, count(*))
               AS upstream_fail_streak
    FROM n GROUP BY benchmark, model, lane
)
SELECT n.benchmark, n.model, n.lane, n.run_key, n.nightly AS upstream_nightly,
       n.upstream_verdict, r.upstream_failing_14d, r.upstream_fail_streak, n.validity
FROM n JOIN record r USING (benchmark, model, lane)
WHERE n.k = 1;

-- The fleet overview reads upstream's side from v_fleet_upstream (one pass over the imported
-- runs instead of two) and carries its record and validity as trailing columns.
CREATE OR REPLACE VIEW omni.v_fleet_latest AS
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
       coalesce(o.lane, u.lane) AS lane, o.candidate_branch, o.baseline_branch, o.variant,
       o.nightly, o.verdict, o.confirmed, coalesce(f.regressed_nights_14d, 0) AS regressed_14d,
       u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d, u.upstream_fail_streak,
       u.validity
FROM ours o
FULL OUTER JOIN omni.v_fleet_upstream u USING (benchmark, model, lane)
LEFT JOIN failing f ON (f.benchmark, f.model, f.lane, f.candidate_branch, f.variant)
    = (o.benchmark, o.model, o.lane, o.candidate_branch, o.variant);

-- A summary-only night's figures as the artifact reported them (DuplexEval's judge means, a
-- seed-TTS summary without items), one row per figure, with the protocol pin it was judged
-- under: trended, never gated.
CREATE VIEW omni.v_summary_figures AS
SELECT r.nightly::timestamptz AS time, r.benchmark, r.model, r.lane, r.branch, r.variant,
       kv.key AS figure, (kv.value #>> '{}')::float8 AS value,
       r.source ->> 'protocol_pin' AS protocol_pin
FROM omni.run r CROSS JOIN LATERAL jsonb_each(r.summary) AS kv(key, value)
WHERE r.status = 'summary_only' AND jsonb_typeof(kv.value) = 'number';

-- The Buildkite sync asks, per artifact, whether it was imported before.
CREATE INDEX run_buildkite_artifact_idx ON omni.run ((source -> 'buildkite' ->> 'artifact_id'));

GRANT SELECT ON omni.v_upstream_night, omni.v_fleet_upstream, omni.v_summary_figures
    TO omni_reader;
