INSERT INTO omni.alert (alert_key, kind, state, opened_nightly, last_nightly, details)
VALUES (%(alert_key)s, %(kind)s, 'open', %(nightly)s, %(nightly)s, %(details)s)
RETURNING alert_id
