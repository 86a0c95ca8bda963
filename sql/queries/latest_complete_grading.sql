-- The grading statistics read: the newest complete one, or the one by a given grader.
SELECT grading_id, grader_id FROM omni.grading
WHERE run_id = %(run_id)s AND status = 'complete'
  AND (%(grader_id)s::text IS NULL OR grader_id = %(grader_id)s)
ORDER BY grading_id DESC LIMIT 1
