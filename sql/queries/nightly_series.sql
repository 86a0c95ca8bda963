-- One branch x variant's nightly series of a run_stats metric (mean over seeds of a night).
SELECT r.nightly, avg(s.tail_fraction) AS tail_fraction, avg(s.capped_mean_wer) AS capped_mean_wer
FROM omni.run_stats s
JOIN omni.grading g USING (grading_id)
JOIN omni.run r USING (run_id)
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s AND r.branch = %(branch)s AND r.variant = %(variant)s
  AND s.tau = %(tau)s AND s.policy_version = %(policy_version)s
GROUP BY r.nightly
ORDER BY r.nightly
