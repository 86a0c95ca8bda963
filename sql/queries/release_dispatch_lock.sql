SELECT pg_advisory_unlock(hashtext('omni_alert_dispatch'))
