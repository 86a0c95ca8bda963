-- Clips of some gradings as the statistics see them (clip_records.sql, for several runs at
-- once: each run with the grading read of it).
SELECT k.grading_id, a.utt_id, a.reference_text, a.synth_status, g.grade_status, g.wer,
       g.ref_words, g.hyp_words, g.hypothesis, g.thinker_wer,
       coalesce(g.task_leak, false) AS task_leak, coalesce(g.is_question, false) AS is_question,
       a.audio_seconds, a.audio_uri, a.error_detail AS synth_detail, g.incorrect, g.breakdown,
       g.sim, g.utmos
FROM unnest(%(run_ids)s::bigint[], %(grading_ids)s::bigint[]) AS k(run_id, grading_id)
JOIN omni.clip_audio a ON a.run_id = k.run_id
LEFT JOIN omni.clip_grade g ON g.grading_id = k.grading_id AND g.utt_id = a.utt_id
WHERE a.run_id = ANY(%(run_ids)s) AND (g.grading_id IS NULL OR g.grading_id = ANY(%(grading_ids)s))
ORDER BY k.grading_id, a.ordinal
