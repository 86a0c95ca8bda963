-- A series' branch's last `nights` nights up to `until` (every stored night when NULL): each
-- night's run (its first seed, as night_baseline_runs.sql picks) with its newest complete
-- grading, and the ledger night recorded for it, if any (a night whose recorded run, grading
-- or tau differs is read again). Oldest first.
SELECT r.nightly, r.run_id, r.commit_sha, gr.grading_id, ln.night_id,
       ln.run_id AS recorded_run_id, ln.grading_id AS recorded_grading_id,
       ln.tau AS recorded_tau
FROM (
    SELECT DISTINCT ON (r.nightly) r.nightly, r.run_id, r.commit_sha
    FROM omni.run r
    WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s
      AND r.branch = %(branch)s AND r.variant = 'default'
      AND (%(until)s::date IS NULL OR r.nightly <= %(until)s::date)
      AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
      AND EXISTS (SELECT 1 FROM omni.grading g WHERE g.run_id = r.run_id AND g.status = 'complete')
    ORDER BY r.nightly DESC, r.seed NULLS FIRST, r.run_id
    LIMIT %(nights)s
) r
JOIN LATERAL (
    SELECT grading_id FROM omni.grading
    WHERE run_id = r.run_id AND status = 'complete' ORDER BY grading_id DESC LIMIT 1
) gr ON true
LEFT JOIN omni.ledger_night ln
    ON ln.benchmark = %(benchmark)s AND ln.model = %(model)s AND ln.lane = %(lane)s
   AND ln.branch = %(branch)s AND ln.nightly = r.nightly
ORDER BY r.nightly
