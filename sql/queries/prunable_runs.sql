-- Runs whose audio retention may remove: nights before the cutoff that still hold audio, except
-- a run an open alert cites, by id: a run of the decision that opened it (its thread plays
-- their clips), or a run whose key is one of its details' values (compared as whole JSON
-- strings, so a key with a quote or a backslash in it is still found, and a key is never
-- found inside another).
WITH open_alert AS (
    SELECT details FROM omni.alert WHERE state = 'open'
), cited AS (
    SELECT unnest(ARRAY[d.candidate_run_id, d.baseline_run_id]) AS run_id
    FROM open_alert al
    JOIN omni.gate_decision d
      ON d.decision_id = CASE WHEN jsonb_typeof(al.details -> 'decision_id') = 'number'
                              THEN (al.details ->> 'decision_id')::numeric::bigint END
    UNION
    SELECT r.run_id
    FROM open_alert al
    CROSS JOIN LATERAL jsonb_path_query(al.details, 'strict $.** ? (@.type() == "string")') v
    JOIN omni.run r ON r.run_key = v #>> '{}'
)
SELECT r.run_id, r.run_key, r.nightly,
       count(*) FILTER (WHERE a.audio_uri IS NOT NULL) AS clips
FROM omni.run r
JOIN omni.clip_audio a ON a.run_id = r.run_id
WHERE r.nightly < %(cutoff)s
  AND r.run_id NOT IN (SELECT run_id FROM cited WHERE run_id IS NOT NULL)
GROUP BY r.run_id, r.run_key, r.nightly
HAVING count(*) FILTER (WHERE a.audio_uri IS NOT NULL) > 0
ORDER BY r.nightly, r.run_key
