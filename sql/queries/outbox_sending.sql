UPDATE omni.alert_outbox SET state = 'sending', attempts = attempts + 1
WHERE message_id = %(message_id)s
