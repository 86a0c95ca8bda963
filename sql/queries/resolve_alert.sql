UPDATE omni.alert SET state = 'resolved', resolved_nightly = %(nightly)s
WHERE alert_id = %(alert_id)s
