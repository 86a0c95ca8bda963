DELETE FROM omni.grading WHERE grading_id = %(grading_id)s
