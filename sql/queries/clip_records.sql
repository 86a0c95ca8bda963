-- Clips of one grading as the statistics see them (synthesis joined with the grade). The run is
-- a parameter, not a join through omni.grading: both partitioned tables are then pruned to one
-- partition when the query is planned, and the grades are read as one range instead of one
-- index probe per clip (whose cost grows with the index, i.e. with history).
SELECT a.utt_id, a.reference_text, a.synth_status, g.grade_status, g.wer, g.ref_words,
       g.hyp_words, g.hypothesis, g.thinker_wer, coalesce(g.task_leak, false) AS task_leak,
       coalesce(g.is_question, false) AS is_question, a.audio_seconds, a.audio_uri,
       a.error_detail AS synth_detail, g.incorrect, g.breakdown, g.sim, g.utmos
FROM omni.clip_audio a
LEFT JOIN omni.clip_grade g ON g.grading_id = %(grading_id)s AND g.utt_id = a.utt_id
WHERE a.run_id = %(run_id)s
ORDER BY a.ordinal
