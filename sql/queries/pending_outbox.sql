SELECT * FROM omni.alert_outbox WHERE state IN ('pending', 'sending') ORDER BY message_id
