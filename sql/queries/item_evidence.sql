-- Each wanted item's clip on one night of a series' branch (utt_ids[i] on nights[i]): what it
-- was asked to say, what the newest complete grading of its run heard, and its audio; of the
-- night's newest run that holds it.
SELECT DISTINCT ON (want.utt_id) want.utt_id, r.nightly, a.reference_text AS reference,
       g.hypothesis AS heard, a.audio_uri
FROM unnest(%(utt_ids)s::text[], %(nights)s::date[]) AS want (utt_id, nightly)
JOIN omni.run r ON r.nightly = want.nightly AND r.benchmark = %(benchmark)s
    AND r.model = %(model)s AND r.lane = %(lane)s AND r.branch = %(branch)s
JOIN omni.clip_audio a ON a.run_id = r.run_id AND a.utt_id = want.utt_id
LEFT JOIN LATERAL (
    SELECT cg.hypothesis FROM omni.grading gr
    JOIN omni.clip_grade cg ON cg.grading_id = gr.grading_id AND cg.utt_id = a.utt_id
    WHERE gr.run_id = r.run_id AND gr.status = 'complete'
    ORDER BY gr.grading_id DESC
    LIMIT 1
) g ON true
ORDER BY want.utt_id, r.run_id DESC
