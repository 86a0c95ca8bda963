SELECT count(*) FILTER (WHERE grade_status = 'graded') AS graded,
       count(*) FILTER (WHERE grade_status = 'empty_transcript') AS empty,
       count(*) FILTER (WHERE grade_status = 'grader_error') AS errors
FROM omni.clip_grade WHERE grading_id = %(grading_id)s
