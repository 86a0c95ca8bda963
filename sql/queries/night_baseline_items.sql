-- The baseline branch's items over the nights before this one (one run a night: its first
-- seed, with the grading the statistics read), for per-item history.
SELECT n.nightly, a.utt_id, a.synth_status, g.grade_status, g.wer, g.incorrect
FROM (
    SELECT DISTINCT ON (r.nightly) r.nightly, r.run_id, gr.grading_id
    FROM omni.run r
    JOIN LATERAL (
        SELECT grading_id FROM omni.grading
        WHERE run_id = r.run_id AND status = 'complete' ORDER BY grading_id DESC LIMIT 1
    ) gr ON true
    WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s
      AND r.branch = %(branch)s AND r.variant = 'default'
      AND r.nightly >= %(first)s AND r.nightly < %(nightly)s
      AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
    ORDER BY r.nightly, r.seed NULLS FIRST, r.run_id
) n
JOIN omni.clip_audio a ON a.run_id = n.run_id
LEFT JOIN omni.clip_grade g ON g.grading_id = n.grading_id AND g.utt_id = a.utt_id
ORDER BY n.nightly, a.utt_id
