-- Every clip with audio is graded: the statistics may read this grading now.
UPDATE omni.grading SET status = 'complete' WHERE grading_id = %(grading_id)s
