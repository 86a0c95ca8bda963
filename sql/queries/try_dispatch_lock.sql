-- One dispatcher at a time (a session lock: held across the per-message commits).
SELECT pg_try_advisory_lock(hashtext('omni_alert_dispatch')) AS ok
