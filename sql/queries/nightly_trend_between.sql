SELECT * FROM omni.v_nightly_trend
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND tau = %(tau)s AND nightly BETWEEN %(first)s AND %(last)s
ORDER BY nightly, branch
