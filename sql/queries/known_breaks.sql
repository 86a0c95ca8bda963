-- Events that explain a step (stack, grader, config changes) for one branch's series.
SELECT DISTINCT time::date AS nightly FROM omni.event
WHERE (benchmark IS NULL OR benchmark = %(benchmark)s)
  AND (branch IS NULL OR branch = %(branch)s)
  AND kind IN ('stack_change', 'grader_change', 'config_change')
ORDER BY 1
