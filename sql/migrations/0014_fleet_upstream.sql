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
