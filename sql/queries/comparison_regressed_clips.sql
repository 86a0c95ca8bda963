-- A comparison's regressed clips (fine in the baseline, broken in the candidate), both sides
-- heard and their audio, whether or not a gate decision points at it (an on-demand A/B has
-- none).
SELECT u.utt_id, ca.reference_text AS reference,
       cg.hypothesis AS candidate_heard, cg.wer AS candidate_wer,
       bg.hypothesis AS baseline_heard, bg.wer AS baseline_wer,
       ca.synth_status AS candidate_status, ca.audio_uri, ba.audio_uri AS baseline_audio_uri
FROM omni.comparison c
CROSS JOIN LATERAL jsonb_array_elements_text(c.result -> 'regressed_clips') AS u (utt_id)
JOIN omni.grading cgr ON cgr.grading_id = c.candidate_grading_id
JOIN omni.clip_audio ca ON ca.run_id = cgr.run_id AND ca.utt_id = u.utt_id
JOIN omni.grading bgr ON bgr.grading_id = c.baseline_grading_id
LEFT JOIN omni.clip_audio ba ON ba.run_id = bgr.run_id AND ba.utt_id = u.utt_id
LEFT JOIN omni.clip_grade cg ON cg.grading_id = c.candidate_grading_id AND cg.utt_id = u.utt_id
LEFT JOIN omni.clip_grade bg ON bg.grading_id = c.baseline_grading_id AND bg.utt_id = u.utt_id
WHERE c.comparison_id = %(comparison_id)s
ORDER BY cg.wer DESC NULLS FIRST, u.utt_id
