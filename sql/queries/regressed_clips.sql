SELECT * FROM omni.v_regressed_clips WHERE comparison_id = %(comparison_id)s
ORDER BY candidate_wer DESC NULLS FIRST, utt_id
