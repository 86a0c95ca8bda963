-- The night's alert planning, one series at a time: alert ids are read before they are
-- inserted (they are contiguous and appear in message text) and groups span series.
SELECT pg_advisory_xact_lock(hashtext('omni.night.alerts'))
