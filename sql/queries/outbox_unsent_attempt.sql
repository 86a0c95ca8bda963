-- Nothing was posted (the configuration was refused): the attempt does not count.
UPDATE omni.alert_outbox SET state = 'pending', attempts = attempts - 1, last_error = %(error)s
WHERE message_id = %(message_id)s
