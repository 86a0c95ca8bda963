SELECT kind, payload, slack_ts FROM omni.alert_outbox WHERE state = 'sent' ORDER BY message_id
