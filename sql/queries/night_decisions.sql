-- A series' decisions (current policy) between two nights, every key, with what confirmation,
-- the alert lifecycle and the commit range read; the comparison's result only from `nightly` on
-- (the nights planned again), the paired counts for all.
SELECT d.decision_id, d.nightly, d.candidate_branch, d.baseline_branch, d.variant, d.verdict,
       d.confirmed, d.mcnemar_p_holm, d.reasons,
       coalesce(c.regressed, 0) AS regressed, coalesce(c.improved, 0) AS improved,
       coalesce(c.n_paired, 0) AS n_paired, coalesce((d.policy ->> 'm')::int, 1) AS m,
       d.comparison_id IS NOT NULL AS paired,
       c.stable_broken AS n11, c.regressed AS n12, c.improved AS n21, c.stable_ok AS n22,
       r.commit_sha, coalesce(r.stack ->> 'vllm_build', r.stack ->> 'vllm') AS vllm, c.tau,
       CASE WHEN d.nightly >= %(nightly)s THEN c.result END AS comparison,
       d.candidate_run_id, r.run_key AS candidate_run_key, d.baseline_run_id,
       r.airflow_dag_id, r.airflow_run_id, d.history
FROM omni.gate_decision d
LEFT JOIN omni.comparison c USING (comparison_id)
LEFT JOIN omni.run r ON r.run_id = d.candidate_run_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
  AND d.policy_version = %(policy_version)s AND d.nightly BETWEEN %(first)s AND %(last)s
ORDER BY d.nightly, d.candidate_branch, d.variant
