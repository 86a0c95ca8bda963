-- The alert a bisect replies to: the one it was started for, else its key's open regression.
SELECT alert_id, alert_key FROM omni.alert
WHERE alert_id = %(alert_id)s
   OR (%(alert_id)s::bigint IS NULL AND state = 'open' AND kind = 'regression'
       AND alert_key LIKE %(pattern)s)
ORDER BY alert_id DESC LIMIT 1
