-- The fleet at a glance: per series (benchmark × model × lane) and candidate, our latest
-- verdict, REGRESSED nights in the last 14, and upstream's own verdict on the newest imported
-- run that carries one (any gate failing: fail; any not evaluated: not evaluated; else pass).
CREATE VIEW omni.v_fleet_latest AS
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
), upstream AS (
    SELECT DISTINCT ON (r.benchmark, r.model, r.lane)
           r.benchmark, r.model, r.lane, r.nightly AS upstream_nightly,
           CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                             WHERE g ->> 'verdict' = 'fail') THEN 'fail'
                WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(r.source -> 'upstream_gates') g
                             WHERE g ->> 'verdict' = 'not_evaluated') THEN 'not evaluated'
                ELSE 'pass' END AS upstream_verdict
    FROM omni.run r
    WHERE jsonb_typeof(r.source -> 'upstream_gates') = 'array'
      AND jsonb_array_length(r.source -> 'upstream_gates') > 0
    ORDER BY r.benchmark, r.model, r.lane, r.nightly DESC, r.run_id DESC
)
SELECT coalesce(o.benchmark, u.benchmark) AS benchmark, coalesce(o.model, u.model) AS model,
       coalesce(o.lane, u.lane) AS lane, o.candidate_branch, o.baseline_branch, o.variant,
       o.nightly, o.verdict, o.confirmed, coalesce(f.regressed_nights_14d, 0) AS regressed_14d,
       u.upstream_nightly, u.upstream_verdict
FROM ours o
FULL OUTER JOIN upstream u USING (benchmark, model, lane)
LEFT JOIN failing f ON (f.benchmark, f.model, f.lane, f.candidate_branch, f.variant)
    = (o.benchmark, o.model, o.lane, o.candidate_branch, o.variant);

GRANT SELECT ON omni.v_fleet_latest TO omni_reader;
