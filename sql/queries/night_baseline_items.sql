-- One baseline run's items with its grading, for per-item history: the run and grading as
-- constants (as clip_records.sql), so each table is pruned to one partition when the query is
-- planned and read through its index; joined otherwise, the cost grows with history.
SELECT a.utt_id, a.synth_status, g.grade_status, g.wer, g.incorrect
FROM omni.clip_audio a
LEFT JOIN omni.clip_grade g ON g.grading_id = %(grading_id)s AND g.utt_id = a.utt_id
WHERE a.run_id = %(run_id)s
