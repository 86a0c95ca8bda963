-- Run keys equal to, or starting with, what a user typed (an exact key wins over prefixes).
SELECT run_key, run_key = %(text)s AS exact
FROM omni.run
WHERE starts_with(run_key, %(text)s)
ORDER BY exact DESC, run_key
LIMIT 6
