-- A gate key's decisions between two nights with the paired counts that confirmation needs (a run-group night
-- has no comparison: paired = false, and pooling skips it).
SELECT d.decision_id, d.nightly, d.verdict, d.confirmed, d.mcnemar_p_holm,
       coalesce(c.regressed, 0) AS regressed, coalesce(c.improved, 0) AS improved,
       coalesce(c.n_paired, 0) AS n_paired, coalesce((d.policy ->> 'm')::int, 1) AS m,
       d.comparison_id IS NOT NULL AS paired
FROM omni.gate_decision d
LEFT JOIN omni.comparison c USING (comparison_id)
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s AND d.candidate_branch = %(candidate_branch)s
  AND d.baseline_branch = %(baseline_branch)s AND d.variant = %(variant)s
  AND d.policy_version = %(policy_version)s
  AND d.nightly BETWEEN %(first)s AND %(last)s
ORDER BY d.nightly
