SELECT * FROM omni.v_official_trend
WHERE benchmark = %(benchmark)s AND nightly = %(nightly)s
ORDER BY branch, variant
