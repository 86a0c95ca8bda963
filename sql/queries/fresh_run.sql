-- Whether a branch has a complete (or partial) run of a benchmark for a night.
SELECT 1 FROM omni.run
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND branch = %(branch)s AND nightly = %(nightly)s
  AND status IN ('complete', 'partial')
LIMIT 1
