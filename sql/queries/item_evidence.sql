-- Each wanted item's clip on one night of a series' branch (utt_ids[i] on nights[i]), from the
-- run the ledger reads that night (ledger_runs.sql: the default variant's first seed, with a
-- complete grading): what it was asked to say, what its newest complete grading heard, and
-- its audio.
SELECT DISTINCT ON (want.utt_id) want.utt_id, r.nightly, a.reference_text AS reference,
       g.hypothesis AS heard, a.audio_uri
FROM unnest(%(utt_ids)s::text[], %(nights)s::date[]) AS want (utt_id, nightly)
JOIN omni.run r ON r.nightly = want.nightly AND r.benchmark = %(benchmark)s
    AND r.model = %(model)s AND r.lane = %(lane)s AND r.branch = %(branch)s
    AND r.variant = 'default' AND r.trigger IN ('nightly', 'backfill', 'manual', 'import')
JOIN LATERAL (
    SELECT grading_id FROM omni.grading
    WHERE run_id = r.run_id AND status = 'complete' ORDER BY grading_id DESC LIMIT 1
) gr ON true
JOIN omni.clip_audio a ON a.run_id = r.run_id AND a.utt_id = want.utt_id
LEFT JOIN omni.clip_grade g ON g.grading_id = gr.grading_id AND g.utt_id = a.utt_id
ORDER BY want.utt_id, r.seed NULLS FIRST, r.run_id
