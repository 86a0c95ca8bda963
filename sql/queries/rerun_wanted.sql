-- A series' night's REGRESSED, unconfirmed decisions of one variant (current policy) with the
-- runs each rests on: what a same-morning re-run may confirm.
SELECT d.candidate_branch, d.baseline_branch,
       c.run_key AS candidate_run_key, c.commit_sha AS candidate_commit,
       b.run_key AS baseline_run_key, b.commit_sha AS baseline_commit,
       d.history
FROM omni.gate_decision d
JOIN omni.run c ON c.run_id = d.candidate_run_id
JOIN omni.run b ON b.run_id = d.baseline_run_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
  AND d.nightly = %(nightly)s AND d.policy_version = %(policy_version)s
  AND d.variant = %(variant)s AND d.verdict = 'REGRESSED' AND NOT d.confirmed
ORDER BY d.candidate_branch
