-- A key's open alert (at most one: alert_open_key_idx).
SELECT alert_id FROM omni.alert WHERE alert_key = %(alert_key)s AND state = 'open'
