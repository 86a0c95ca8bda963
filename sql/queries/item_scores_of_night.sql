SELECT branch, variant, accuracy, sim_mean, utmos_mean FROM omni.v_item_scores
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND nightly = %(nightly)s AND tau = %(tau)s
ORDER BY branch, variant
