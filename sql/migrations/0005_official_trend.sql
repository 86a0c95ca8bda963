-- The harness's own figure (seed_tts_content_error_mean: mean WER over graded clips, failures
-- left out) per night, for every run that has it: recomputed from clip rows where the run has
-- them, as the artifact reported it where it has none (summary-only history, e.g. today's
-- nightly artifacts). Summary-only nights are marked: they cannot be gated, only shown.
CREATE VIEW omni.v_official_trend AS
SELECT (r.nightly::timestamp AT TIME ZONE 'UTC') AS time, r.benchmark, r.nightly, r.branch,
       r.variant, count(*) AS runs,
       bool_and(r.status = 'summary_only') AS summary_only,
       avg((coalesce(o.figures, r.summary) ->> 'seed_tts_content_error_mean')::double precision)
           AS official_mean,
       sum((coalesce(o.figures, r.summary) ->> 'seed_tts_content_evaluated')::bigint)
           AS evaluated
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT rs.stats -> 'official' AS figures
    FROM omni.grading g JOIN omni.run_stats rs USING (grading_id)
    WHERE g.run_id = r.run_id AND rs.stats ? 'official'
    ORDER BY g.grading_id DESC, rs.computed_at DESC LIMIT 1
) o ON true
WHERE r.status <> 'running'
  AND coalesce(o.figures, r.summary) ? 'seed_tts_content_error_mean'
GROUP BY r.nightly, r.benchmark, r.branch, r.variant;
