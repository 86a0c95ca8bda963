-- Runs whose audio retention may remove: nights before the cutoff that still hold audio, except
-- a run any open alert cites (its key anywhere in the alert's details: the clips it shows).
SELECT r.run_id, r.run_key, r.nightly,
       count(*) FILTER (WHERE a.audio_uri IS NOT NULL) AS clips
FROM omni.run r
JOIN omni.clip_audio a ON a.run_id = r.run_id
WHERE r.nightly < %(cutoff)s
  AND NOT EXISTS (
      SELECT 1 FROM omni.alert al
      WHERE al.state = 'open' AND strpos(al.details::text, r.run_key) > 0)
GROUP BY r.run_id, r.run_key, r.nightly
HAVING count(*) FILTER (WHERE a.audio_uri IS NOT NULL) > 0
ORDER BY r.nightly, r.run_key
