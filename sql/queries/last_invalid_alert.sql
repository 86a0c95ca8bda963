-- The newest alert of a key that someone closed (invalid or ignored, or a duplicate /
-- downstream of another alert): it keeps the commits it covered, and only a new one reopens the key.
SELECT * FROM omni.alert
WHERE alert_key = %(alert_key)s AND state = 'resolved'
  AND details -> 'triage' ->> 'status' IN ('invalid', 'duplicate', 'downstream', 'ignored')
ORDER BY alert_id DESC LIMIT 1
