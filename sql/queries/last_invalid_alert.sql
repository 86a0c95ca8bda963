-- The newest alert of a key that someone marked invalid (it keeps the commits it covered).
SELECT * FROM omni.alert
WHERE alert_key = %(alert_key)s AND state = 'resolved' AND details -> 'triage' ->> 'status' = 'invalid'
ORDER BY alert_id DESC LIMIT 1
