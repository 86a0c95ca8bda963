-- Runs of one nightly with their latest complete grading (the one the gate reads): the night's
-- own triggers only (an A/B's, a bisect's, an ablation's, a superseded retry's or a concurrency
-- check's runs are never the night's).
SELECT r.run_id, r.run_key, r.benchmark, r.model, r.lane, r.branch, r.variant, r.seed, r.status, r.n_expected,
       r.dataset_fingerprint, r.prompt_fingerprint, r.execution_fingerprint, r.lineage,
       g.grading_id, g.grader_id
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT grading_id, grader_id FROM omni.grading WHERE run_id = r.run_id AND status = 'complete'
    ORDER BY grading_id DESC LIMIT 1) g ON true
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s AND r.nightly = %(nightly)s
  AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
ORDER BY r.branch, r.variant, r.seed NULLS FIRST, r.run_key
