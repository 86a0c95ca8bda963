INSERT INTO omni.run_stats (grading_id, tau, policy_version, n_expected, n_scored, n_failed,
    n_infra, coverage, mean_wer, median_wer, capped_mean_wer, tail_fraction, tail_ci_low,
    tail_ci_high, stats)
VALUES (%(grading_id)s, %(tau)s, %(policy_version)s, %(n_expected)s, %(n_scored)s, %(n_failed)s,
    %(n_infra)s, %(coverage)s, %(mean_wer)s, %(median_wer)s, %(capped_mean_wer)s,
    %(tail_fraction)s, %(tail_ci_low)s, %(tail_ci_high)s, %(stats)s)
ON CONFLICT (grading_id, tau, policy_version) DO UPDATE SET
    n_expected = EXCLUDED.n_expected, n_scored = EXCLUDED.n_scored,
    n_failed = EXCLUDED.n_failed, n_infra = EXCLUDED.n_infra, coverage = EXCLUDED.coverage,
    mean_wer = EXCLUDED.mean_wer, median_wer = EXCLUDED.median_wer,
    capped_mean_wer = EXCLUDED.capped_mean_wer, tail_fraction = EXCLUDED.tail_fraction,
    tail_ci_low = EXCLUDED.tail_ci_low, tail_ci_high = EXCLUDED.tail_ci_high,
    stats = EXCLUDED.stats
WHERE omni.run_stats.stats IS DISTINCT FROM EXCLUDED.stats
