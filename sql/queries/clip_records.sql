-- Clips of one grading as the statistics see them (synthesis joined with the grade).
SELECT a.utt_id, a.reference_text, a.synth_status, g.grade_status, g.wer, g.ref_words,
       g.hyp_words, g.hypothesis, g.thinker_wer, coalesce(g.task_leak, false) AS task_leak,
       coalesce(g.is_question, false) AS is_question, a.audio_seconds, a.audio_uri,
       a.error_detail AS synth_detail, g.incorrect, g.breakdown, g.sim, g.utmos
FROM omni.grading gr
JOIN omni.clip_audio a ON a.run_id = gr.run_id
LEFT JOIN omni.clip_grade g ON g.grading_id = %(grading_id)s AND g.utt_id = a.utt_id
WHERE gr.grading_id = %(grading_id)s
ORDER BY a.ordinal
