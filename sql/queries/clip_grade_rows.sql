SELECT * FROM omni.clip_grade WHERE grading_id = %(grading_id)s
