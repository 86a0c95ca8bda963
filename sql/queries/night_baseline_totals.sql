-- The baseline branch's broken total on each night before this one (its first seed's newest
-- complete grading, from the statistics stored at τ under the policy version): what run-level
-- noise φ is estimated from. One row a night from run_stats, never the item rows.
SELECT DISTINCT ON (r.nightly) r.nightly, (s.stats ->> 'n_broken')::int AS n_broken
FROM omni.run r
JOIN LATERAL (
    SELECT grading_id FROM omni.grading
    WHERE run_id = r.run_id AND status = 'complete' ORDER BY grading_id DESC LIMIT 1
) gr ON true
JOIN omni.run_stats s
  ON s.grading_id = gr.grading_id AND s.tau = %(tau)s AND s.policy_version = %(policy_version)s
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s
  AND r.branch = %(branch)s AND r.variant = 'default'
  AND r.nightly >= %(first)s AND r.nightly < %(nightly)s
  AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
ORDER BY r.nightly, r.seed NULLS FIRST, r.run_id
