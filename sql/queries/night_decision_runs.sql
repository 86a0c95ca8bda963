-- A key's decision of one night with its candidate and baseline runs (what an ablation's
-- clips are chosen from), the newest policy's first.
SELECT d.decision_id, d.verdict, d.confirmed, c.run_key AS candidate_key,
       c.commit_sha AS candidate_commit, c.stack AS candidate_stack, b.run_key AS baseline_key,
       b.commit_sha AS baseline_commit
FROM omni.gate_decision d
JOIN omni.run c ON c.run_id = d.candidate_run_id
JOIN omni.run b ON b.run_id = d.baseline_run_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
  AND d.nightly = %(nightly)s AND d.candidate_branch = %(candidate_branch)s
  AND d.baseline_branch = %(baseline_branch)s AND d.variant = %(variant)s
  AND d.policy_version = %(policy_version)s
ORDER BY d.decided_at DESC
LIMIT 1
