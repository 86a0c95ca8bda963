-- A key's verdicts after a night, up to and including another (oldest first), with the upper
-- bound of each paired night's Δ tail (NULL for a group night, which stores no paired table).
SELECT d.nightly, d.verdict, c.delta_tail_ci_high AS delta_high
FROM omni.gate_decision d
LEFT JOIN omni.comparison c ON c.comparison_id = d.comparison_id
WHERE d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
  AND d.candidate_branch = %(candidate_branch)s AND d.baseline_branch = %(baseline_branch)s
  AND d.variant = %(variant)s AND d.policy_version = %(policy_version)s
  AND d.nightly > %(after)s AND d.nightly <= %(until)s
ORDER BY d.nightly
