-- A regression alert's range of nights, its line for a group's message, and how long its
-- opening post waits for other series to join it (the triage delay).
UPDATE omni.alert
SET range_from = %(range_from)s, range_to = %(range_to)s,
    hold_until = now() + make_interval(secs => %(delay_s)s),
    details = details || %(details)s
WHERE alert_id = %(alert_id)s
