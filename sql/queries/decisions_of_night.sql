-- Gate decisions (current policy) with their comparison and candidate run: one night's, or
-- with `until` later than `nightly`, a range (oldest first); optionally one key's only.
SELECT d.decision_id, d.benchmark, d.model, d.lane, d.nightly, d.candidate_branch, d.baseline_branch, d.variant,
       d.verdict, d.confirmed, d.mcnemar_p_holm, d.reasons, d.policy_version,
       c.result AS comparison, c.tau, r.run_id AS candidate_run_id, r.airflow_dag_id,
       r.airflow_run_id, r.run_key AS candidate_run_key, d.baseline_run_id
FROM omni.gate_decision d
LEFT JOIN omni.comparison c USING (comparison_id)
LEFT JOIN omni.run r ON r.run_id = d.candidate_run_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s AND d.nightly BETWEEN %(nightly)s AND %(until)s
  AND d.policy_version = %(policy_version)s
  AND (%(candidate_branch)s::text IS NULL OR (d.candidate_branch, d.baseline_branch, d.variant)
       = (%(candidate_branch)s::text, %(baseline_branch)s::text, %(variant)s::text))
ORDER BY d.nightly, d.candidate_branch, d.variant
