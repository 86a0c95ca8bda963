SELECT parent_ts FROM omni.alert WHERE alert_id = %(alert_id)s
