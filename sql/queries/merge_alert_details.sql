-- Merge keys into an alert's details (a JSON object).
UPDATE omni.alert SET details = details || %(details)s WHERE alert_id = %(alert_id)s
