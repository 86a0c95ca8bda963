-- A comparison's two gradings and their runs: the clip queries of a comparison take them as
-- constants, so each partitioned clip table is pruned to one partition when the query is
-- planned (joined through omni.grading, every partition is read, and the cost grows with
-- history: bench/bench_fleet_year.py's reports stage).
SELECT c.candidate_grading_id, cg.run_id AS candidate_run_id,
       c.baseline_grading_id, bg.run_id AS baseline_run_id
FROM omni.comparison c
JOIN omni.grading cg ON cg.grading_id = c.candidate_grading_id
JOIN omni.grading bg ON bg.grading_id = c.baseline_grading_id
WHERE c.comparison_id = %(comparison_id)s
