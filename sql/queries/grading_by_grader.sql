SELECT grading_id, status FROM omni.grading
WHERE run_id = %(run_id)s AND grader_id = %(grader_id)s
