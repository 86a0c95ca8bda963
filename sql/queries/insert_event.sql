-- Annotations and known breaks; dedup_key keeps re-runs from adding the same event twice.
INSERT INTO omni.event (time, kind, benchmark, branch, variant, text, tags, details, dedup_key)
VALUES (%(time)s, %(kind)s, %(benchmark)s, %(branch)s, %(variant)s, %(text)s, %(tags)s,
        %(details)s, %(dedup_key)s)
ON CONFLICT (dedup_key) DO NOTHING
