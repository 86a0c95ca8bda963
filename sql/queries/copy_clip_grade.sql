COPY omni.clip_grade (grading_id, utt_id, grade_status, hypothesis, hypothesis_norm, ref_words,
                      hyp_words, substitutions, deletions, insertions, hits, wer, thinker_wer,
                      task_leak, is_question, error_detail, incorrect, breakdown, sim,
                      utmos) FROM STDIN
