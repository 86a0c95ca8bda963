-- What the alert's parent message says now: its newest post or update.
SELECT payload FROM omni.alert_outbox
WHERE alert_id = %(alert_id)s AND kind IN ('post', 'update')
ORDER BY message_id DESC LIMIT 1
