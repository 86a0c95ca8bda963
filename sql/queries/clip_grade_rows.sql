-- A grading's clip grades as stored (records.ClipGrade's fields): what its content hash covers.
SELECT utt_id, grade_status, hypothesis, hypothesis_norm, ref_words, hyp_words, substitutions,
       deletions, insertions, hits, wer, thinker_wer, task_leak, is_question, error_detail,
       incorrect, breakdown, sim, utmos
FROM omni.clip_grade WHERE grading_id = %(grading_id)s
