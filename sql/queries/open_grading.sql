-- A grading being written clip batch by clip batch; statistics read only complete ones.
INSERT INTO omni.grading (run_id, grader_id, grader, status)
VALUES (%(run_id)s, %(grader_id)s, %(grader)s, 'running')
ON CONFLICT (run_id, grader_id) DO UPDATE SET grader = omni.grading.grader
RETURNING grading_id, status
