SELECT count(*) AS n FROM omni.alert_outbox WHERE state <> 'sent'
