UPDATE omni.alert
SET state = %(state)s, resolved_nightly = %(resolved_nightly)s, details = %(details)s
WHERE alert_id = %(alert_id)s
