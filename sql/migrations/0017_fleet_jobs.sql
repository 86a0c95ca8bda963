-- The fleet as upstream's jobs wrote it (importers/buildkite.py): an attempt of a Buildkite job
-- that a retry superseded is kept as its own trigger, `retry` (stored, never the night's run,
-- never a conflict); a realtime or reference-as-input night is its series' variant of that name
-- (its own baseline); every imported night records its hardware SKU and whether its step
-- blocks upstream, and the fleet view shows both.
ALTER TABLE omni.run DROP CONSTRAINT run_trigger_check;
ALTER TABLE omni.run ADD CONSTRAINT run_trigger_check
    CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import', 'ab', 'ablate',
                       'retry'));

CREATE OR REPLACE VIEW omni.v_upstream_night AS
SELECT r.run_id, r.run_key, r.benchmark, r.model, r.lane, r.branch, r.nightly,
       CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                         WHERE g ->> 'verdict' = 'fail') THEN 'fail'
            WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                         WHERE g ->> 'verdict' = 'not_evaluated') THEN 'not evaluated'
            ELSE 'pass' END AS upstream_verdict,
       coalesce(r.source -> 'validity', '[]'::jsonb) AS validity,
       r.variant,
       coalesce((r.source -> 'buildkite' ->> 'blocking')::boolean, true) AS blocking,
       r.source -> 'buildkite' ->> 'sku' AS sku
FROM omni.run r
WHERE jsonb_typeof(r.source -> 'upstream_gates') = 'array'
  AND jsonb_array_length(r.source -> 'upstream_gates') > 0
  AND r.trigger <> 'retry';

CREATE OR REPLACE VIEW omni.v_fleet_upstream AS
WITH n AS (
    SELECT u.*,
           row_number() OVER w AS k,
           max(nightly) OVER (PARTITION BY benchmark, model, lane, variant) AS newest_nightly
    FROM omni.v_upstream_night u
    WINDOW w AS (PARTITION BY benchmark, model, lane, variant ORDER BY nightly DESC, run_id DESC)
), record AS (
    SELECT benchmark, model, lane, variant,
           count(DISTINCT nightly) FILTER (WHERE upstream_verdict = 'fail'
                                           AND nightly > newest_nightly - 14)
               AS upstream_failing_14d,
           coalesce(min(k) FILTER (WHERE upstream_verdict <> 'fail') - 1, count(*))
               AS upstream_fail_streak
    FROM n GROUP BY benchmark, model, lane, variant
)
SELECT n.benchmark, n.model, n.lane, n.run_key, n.nightly AS upstream_nightly,
       n.upstream_verdict, r.upstream_failing_14d, r.upstream_fail_streak, n.validity,
       n.variant, n.blocking, n.sku
FROM n JOIN record r USING (benchmark, model, lane, variant)
WHERE n.k = 1;

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
       coalesce(o.lane, u.lane) AS lane, o.candidate_branch, o.baseline_branch,
       coalesce(o.variant, u.variant) AS variant,
       o.nightly, o.verdict, o.confirmed, coalesce(f.regressed_nights_14d, 0) AS regressed_14d,
       u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d, u.upstream_fail_streak,
       u.validity, u.blocking, u.sku
FROM ours o
FULL OUTER JOIN omni.v_fleet_upstream u
    ON (u.benchmark, u.model, u.lane, u.variant) = (o.benchmark, o.model, o.lane, o.variant)
LEFT JOIN failing f ON (f.benchmark, f.model, f.lane, f.candidate_branch, f.variant)
    = (o.benchmark, o.model, o.lane, o.candidate_branch, o.variant);
