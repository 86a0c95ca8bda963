-- The run a grading graded.
SELECT run_id FROM omni.grading WHERE grading_id = %(grading_id)s
