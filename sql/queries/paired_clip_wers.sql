-- Per-clip capped WER on both sides of a comparison (NULL = no grade: failed or infra); its
-- gradings and candidate run are constants (comparison_sides.sql).
SELECT a.utt_id, least(b.wer, 1.0) AS baseline_wer, least(c.wer, 1.0) AS candidate_wer,
       a.reference_text AS reference
FROM omni.clip_audio a
LEFT JOIN omni.clip_grade c ON c.grading_id = %(candidate_grading_id)s AND c.utt_id = a.utt_id
LEFT JOIN omni.clip_grade b ON b.grading_id = %(baseline_grading_id)s AND b.utt_id = a.utt_id
WHERE a.run_id = %(candidate_run_id)s
ORDER BY a.ordinal
