-- The baseline branch's run of each night before this one (its first seed, with its newest
-- complete grading): whose items the per-item history reads (night_baseline_items.sql).
SELECT DISTINCT ON (r.nightly) r.nightly, r.run_id, gr.grading_id
FROM omni.run r
JOIN LATERAL (
    SELECT grading_id FROM omni.grading
    WHERE run_id = r.run_id AND status = 'complete' ORDER BY grading_id DESC LIMIT 1
) gr ON true
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s
  AND r.branch = %(branch)s AND r.variant = 'default'
  AND r.nightly >= %(first)s AND r.nightly < %(nightly)s
  AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
ORDER BY r.nightly, r.seed NULLS FIRST, r.run_id
