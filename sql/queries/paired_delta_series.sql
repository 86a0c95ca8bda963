-- One candidate x baseline x variant's nightly paired Δ tail (the gate's comparison of each
-- non-INFRA night; run-group nights store no paired comparison and are left out).
SELECT d.nightly, c.delta_tail_fraction AS paired_delta, d.verdict
FROM omni.gate_decision d
JOIN omni.comparison c ON c.comparison_id = d.comparison_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
  AND d.candidate_branch = %(branch)s AND d.baseline_branch = %(baseline)s
  AND d.variant = %(variant)s AND d.policy_version = %(policy_version)s
  AND d.verdict <> 'INFRA' AND c.delta_tail_fraction IS NOT NULL
ORDER BY d.nightly
