-- A comparison's regressed clips (fine in the baseline, broken in the candidate), both sides
-- heard and their audio, whether or not a gate decision points at it (an on-demand A/B has
-- none). Its gradings and runs are constants (comparison_sides.sql).
SELECT u.utt_id, ca.reference_text AS reference,
       cg.hypothesis AS candidate_heard, cg.wer AS candidate_wer,
       bg.hypothesis AS baseline_heard, bg.wer AS baseline_wer,
       ca.synth_status AS candidate_status, ca.audio_uri, ba.audio_uri AS baseline_audio_uri
FROM omni.comparison c
CROSS JOIN LATERAL jsonb_array_elements_text(c.result -> 'regressed_clips') AS u (utt_id)
JOIN omni.clip_audio ca ON ca.run_id = %(candidate_run_id)s AND ca.utt_id = u.utt_id
LEFT JOIN omni.clip_audio ba ON ba.run_id = %(baseline_run_id)s AND ba.utt_id = u.utt_id
LEFT JOIN omni.clip_grade cg ON cg.grading_id = %(candidate_grading_id)s AND cg.utt_id = u.utt_id
LEFT JOIN omni.clip_grade bg ON bg.grading_id = %(baseline_grading_id)s AND bg.utt_id = u.utt_id
WHERE c.comparison_id = %(comparison_id)s
ORDER BY cg.wer DESC NULLS FIRST, u.utt_id
