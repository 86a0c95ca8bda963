-- The id the next alert gets (read under night_lock; the write checks each one it inserts).
SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('omni.alert', 'alert_id')::regclass), 0) + 1 AS next_id
