-- One alert, locked for a triage action.
SELECT * FROM omni.alert WHERE alert_id = %(alert_id)s FOR UPDATE
