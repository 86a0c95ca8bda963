-- Statistics read complete gradings only: a grading is `running` while a pipelined run (or a
-- re-grade) writes it batch by batch, and a crashed one stays so until its re-run finishes.
-- The panels and the report keep showing the newest complete grading meanwhile.
CREATE OR REPLACE VIEW omni.v_run_stats AS
SELECT (r.nightly::timestamp AT TIME ZONE 'UTC') AS time,
       r.run_id, r.run_key, r.benchmark, r.nightly, r.branch, r.variant, r.seed, r.commit_sha,
       r.status, r.trigger, g.grading_id, g.grader_id, s.tau, s.policy_version,
       s.tail_fraction, s.tail_ci_low, s.tail_ci_high, s.capped_mean_wer, s.mean_wer,
       s.median_wer, s.coverage, s.n_expected, s.n_scored, s.n_failed, s.n_infra,
       coalesce((s.stats ->> 'n_broken')::int, 0) AS n_broken, s.stats
FROM omni.run r
JOIN omni.grading g
  ON g.grading_id = (SELECT max(g2.grading_id) FROM omni.grading g2
                     WHERE g2.run_id = r.run_id AND g2.status = 'complete')
JOIN LATERAL (
    SELECT DISTINCT ON (rs.tau) rs.* FROM omni.run_stats rs
    WHERE rs.grading_id = g.grading_id ORDER BY rs.tau, rs.computed_at DESC
) s ON true;
