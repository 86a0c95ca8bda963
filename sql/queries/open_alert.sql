SELECT * FROM omni.alert WHERE alert_key = %(alert_key)s AND state = 'open'
