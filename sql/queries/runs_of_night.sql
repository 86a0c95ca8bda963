-- A night's runs (or one of them, by run_id) with their newest grading's grader (what
-- reproduces each); a concurrency check's runs are its own report's, not the night's.
SELECT r.*, g.grader
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT gr.grader FROM omni.grading gr WHERE gr.run_id = r.run_id
    ORDER BY gr.grading_id DESC LIMIT 1
) g ON true
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s AND r.nightly = %(nightly)s
  AND (%(run_id)s::bigint IS NULL OR r.run_id = %(run_id)s)
  AND r.trigger <> 'concurrency'
ORDER BY r.branch, r.variant, r.seed
