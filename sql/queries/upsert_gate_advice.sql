INSERT INTO omni.gate_advice (benchmark, model, lane, branch, figure, nightly, gate, threshold,
                              p_fail, p_fail_low, p_fail_high, suggested, nights, advice)
VALUES (%(benchmark)s, %(model)s, %(lane)s, %(branch)s, %(figure)s, %(nightly)s, %(gate)s,
        %(threshold)s, %(p_fail)s, %(p_fail_low)s, %(p_fail_high)s, %(suggested_threshold)s,
        %(nights)s, %(advice)s)
ON CONFLICT (benchmark, model, lane, figure, nightly) DO UPDATE
SET branch = EXCLUDED.branch, gate = EXCLUDED.gate, threshold = EXCLUDED.threshold,
    p_fail = EXCLUDED.p_fail, p_fail_low = EXCLUDED.p_fail_low,
    p_fail_high = EXCLUDED.p_fail_high, suggested = EXCLUDED.suggested,
    nights = EXCLUDED.nights, advice = EXCLUDED.advice, computed_at = now()
