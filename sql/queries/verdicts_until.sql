-- A key's verdicts up to and including a night, newest first, with the candidate run's commit
-- and vLLM (its build, else its version), and each paired night's table (NULL for a group
-- night, which stores no paired table).
SELECT d.nightly, d.verdict, r.commit_sha, r.stack ->> 'vllm_build' AS vllm_build,
       r.stack ->> 'vllm' AS vllm, c.stable_broken AS n11, c.regressed AS n12,
       c.improved AS n21, c.stable_ok AS n22
FROM omni.gate_decision d
LEFT JOIN omni.run r ON r.run_id = d.candidate_run_id
LEFT JOIN omni.comparison c ON c.comparison_id = d.comparison_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s AND d.candidate_branch = %(candidate_branch)s
  AND d.baseline_branch = %(baseline_branch)s AND d.variant = %(variant)s
  AND d.policy_version = %(policy_version)s AND d.nightly <= %(until)s
ORDER BY d.nightly DESC
