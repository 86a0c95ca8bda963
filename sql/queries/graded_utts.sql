-- The clips a grading has grades for (a resumed grading skips them).
SELECT utt_id FROM omni.clip_grade WHERE grading_id = %(grading_id)s
