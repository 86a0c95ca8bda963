UPDATE omni.alert SET parent_ts = %(ts)s, channel = %(channel)s WHERE alert_id = %(alert_id)s
