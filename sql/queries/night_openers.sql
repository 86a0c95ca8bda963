-- Decisions by id (open alerts' opening decisions outside the loaded window).
SELECT d.decision_id, d.benchmark, d.model, d.lane, d.nightly, d.candidate_branch,
       d.baseline_branch, d.variant, d.verdict, d.confirmed, d.mcnemar_p_holm, d.reasons,
       d.policy_version
FROM omni.gate_decision d WHERE d.decision_id = ANY(%(ids)s)
