-- Seeds any run of the series ran (whatever its trigger) at or above a floor, but the runs
-- whose keys start with `own` (a re-run's own runs, on a retry): what fresh seeds skip.
SELECT DISTINCT seed FROM omni.run
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
  AND seed >= %(floor)s AND left(run_key, length(%(own)s)) <> %(own)s
