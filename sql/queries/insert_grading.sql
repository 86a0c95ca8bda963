INSERT INTO omni.grading (run_id, grader_id, grader) VALUES (%(run_id)s, %(grader_id)s, %(grader)s)
RETURNING grading_id
