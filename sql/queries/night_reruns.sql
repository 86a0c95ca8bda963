-- The series' same-morning re-run results over a window of nights (night/gate.py reads them).
SELECT nightly, candidate_branch, baseline_branch, variant, result
FROM omni.rerun
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
  AND nightly BETWEEN %(first)s AND %(last)s
ORDER BY nightly, candidate_branch, variant
