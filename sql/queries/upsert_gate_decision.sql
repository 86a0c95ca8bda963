INSERT INTO omni.gate_decision (benchmark, model, lane, nightly, candidate_branch, baseline_branch, variant,
    policy_version, verdict, confirmed, mcnemar_p, mcnemar_p_holm, comparison_id,
    candidate_run_id, baseline_run_id, reasons, policy, history)
VALUES (%(benchmark)s, %(model)s, %(lane)s, %(nightly)s, %(candidate_branch)s, %(baseline_branch)s, %(variant)s,
    %(policy_version)s, %(verdict)s, %(confirmed)s, %(mcnemar_p)s, %(mcnemar_p_holm)s,
    %(comparison_id)s, %(candidate_run_id)s, %(baseline_run_id)s, %(reasons)s, %(policy)s, %(history)s)
ON CONFLICT (benchmark, model, lane, nightly, candidate_branch, baseline_branch, variant, policy_version)
DO UPDATE SET verdict = EXCLUDED.verdict, confirmed = EXCLUDED.confirmed,
    mcnemar_p = EXCLUDED.mcnemar_p, mcnemar_p_holm = EXCLUDED.mcnemar_p_holm,
    comparison_id = EXCLUDED.comparison_id, candidate_run_id = EXCLUDED.candidate_run_id,
    baseline_run_id = EXCLUDED.baseline_run_id, reasons = EXCLUDED.reasons,
    policy = EXCLUDED.policy, history = EXCLUDED.history
RETURNING decision_id
