-- The series with runs on a night (what a command naming another series could mean).
SELECT DISTINCT benchmark, model, lane FROM omni.run WHERE nightly = %(nightly)s
ORDER BY benchmark, model, lane LIMIT 50
