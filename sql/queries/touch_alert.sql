-- Another night of an open alert: its last night, and details merged in.
UPDATE omni.alert SET last_nightly = %(nightly)s, details = details || %(details)s
WHERE alert_id = %(alert_id)s
