-- Serialize writers of one run key (two retries cannot both insert).
SELECT pg_advisory_xact_lock(hashtextextended(%(run_key)s, 7))
