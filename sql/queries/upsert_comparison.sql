INSERT INTO omni.comparison (baseline_grading_id, candidate_grading_id, tau, policy_version,
    comparable, n_paired, stable_broken, regressed, improved, stable_ok, p_regress, p_improve,
    delta_tail_fraction, delta_tail_ci_low, delta_tail_ci_high, delta_capped_mean_wer, result)
VALUES (%(baseline_grading_id)s, %(candidate_grading_id)s, %(tau)s, %(policy_version)s,
    %(comparable)s, %(n_paired)s, %(stable_broken)s, %(regressed)s, %(improved)s, %(stable_ok)s,
    %(p_regress)s, %(p_improve)s, %(delta_tail_fraction)s, %(delta_tail_ci_low)s,
    %(delta_tail_ci_high)s, %(delta_capped_mean_wer)s, %(result)s)
ON CONFLICT (baseline_grading_id, candidate_grading_id, tau, policy_version) DO UPDATE SET
    comparable = EXCLUDED.comparable, n_paired = EXCLUDED.n_paired,
    stable_broken = EXCLUDED.stable_broken, regressed = EXCLUDED.regressed,
    improved = EXCLUDED.improved, stable_ok = EXCLUDED.stable_ok,
    p_regress = EXCLUDED.p_regress, p_improve = EXCLUDED.p_improve,
    delta_tail_fraction = EXCLUDED.delta_tail_fraction,
    delta_tail_ci_low = EXCLUDED.delta_tail_ci_low,
    delta_tail_ci_high = EXCLUDED.delta_tail_ci_high,
    delta_capped_mean_wer = EXCLUDED.delta_capped_mean_wer, result = EXCLUDED.result
RETURNING comparison_id
