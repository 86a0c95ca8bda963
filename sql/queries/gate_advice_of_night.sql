-- The newest advice per figure for a series, computed on or before the night.
SELECT DISTINCT ON (figure) figure, nightly, advice
FROM omni.gate_advice
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
  AND nightly <= %(nightly)s
ORDER BY figure, nightly DESC
