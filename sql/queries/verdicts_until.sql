-- A key's verdicts up to and including a night, newest first, with the candidate run's commit.
SELECT d.nightly, d.verdict, r.commit_sha
FROM omni.gate_decision d
LEFT JOIN omni.run r ON r.run_id = d.candidate_run_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s AND d.candidate_branch = %(candidate_branch)s
  AND d.baseline_branch = %(baseline_branch)s AND d.variant = %(variant)s
  AND d.policy_version = %(policy_version)s AND d.nightly <= %(until)s
ORDER BY d.nightly DESC
