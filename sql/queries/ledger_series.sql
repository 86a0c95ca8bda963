-- The stored series of a benchmark (optionally one model or lane).
SELECT DISTINCT benchmark, model, lane FROM omni.run
WHERE benchmark = %(benchmark)s
  AND (%(model)s::text IS NULL OR model = %(model)s::text)
  AND (%(lane)s::text IS NULL OR lane = %(lane)s::text)
ORDER BY model, lane
