-- Per-clip capped WER on both sides of a comparison (NULL = no grade: failed or infra).
SELECT a.utt_id, least(b.wer, 1.0) AS baseline_wer, least(c.wer, 1.0) AS candidate_wer,
       a.reference_text AS reference
FROM omni.comparison cmp
JOIN omni.grading cg ON cg.grading_id = cmp.candidate_grading_id
JOIN omni.clip_audio a ON a.run_id = cg.run_id
LEFT JOIN omni.clip_grade c ON c.grading_id = cmp.candidate_grading_id AND c.utt_id = a.utt_id
LEFT JOIN omni.clip_grade b ON b.grading_id = cmp.baseline_grading_id AND b.utt_id = a.utt_id
WHERE cmp.comparison_id = %(comparison_id)s
ORDER BY a.ordinal
