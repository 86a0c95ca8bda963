SELECT * FROM omni.v_official_trend
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND nightly = %(nightly)s
ORDER BY branch, variant
