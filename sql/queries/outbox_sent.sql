UPDATE omni.alert_outbox SET state = 'sent', slack_ts = %(ts)s, sent_at = now(), last_error = NULL
WHERE message_id = %(message_id)s
