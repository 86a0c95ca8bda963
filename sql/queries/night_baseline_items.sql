-- One baseline night's item set, computed from its clips once and stored (omni.item_set):
-- every item it has a clip of, and those broken at %(tau)s. Broken is analysis/accounting.py's
-- `is_broken`, column for column (tests/integration/test_night_history.py checks the two agree
-- on every status). The run and grading are constants (as clip_records.sql), so each table is
-- pruned to one partition when the query is planned and read through its index. A run with
-- no clip stores nothing.
INSERT INTO omni.item_set (grading_id, tau, observed, broken)
SELECT %(grading_id)s, %(tau)s, array_agg(a.utt_id),
       coalesce(array_agg(a.utt_id) FILTER (WHERE CASE
           WHEN a.synth_status IN ('no_audio', 'timeout_partial') THEN true
           WHEN a.synth_status NOT IN ('ok', 'over_long') THEN false
           WHEN g.grade_status IS NULL OR g.grade_status NOT IN ('graded', 'empty_transcript')
               THEN false
           WHEN g.incorrect IS NOT NULL THEN g.incorrect
           WHEN a.synth_status = 'over_long' THEN true
           WHEN g.grade_status = 'empty_transcript' THEN coalesce(g.wer, 1.0) > %(tau)s
           ELSE coalesce(g.wer, 0.0) > %(tau)s
       END), '{}')
FROM omni.clip_audio a
LEFT JOIN omni.clip_grade g ON g.grading_id = %(grading_id)s AND g.utt_id = a.utt_id
WHERE a.run_id = %(run_id)s
HAVING count(*) > 0
ON CONFLICT DO NOTHING
RETURNING observed, broken
