UPDATE omni.alert_outbox SET state = %(state)s, last_error = %(error)s
WHERE message_id = %(message_id)s
