SELECT 1 FROM omni.run
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND nightly = %(nightly)s
LIMIT 1
