-- One migrator at a time.
SELECT pg_advisory_xact_lock(%(lock_id)s)
