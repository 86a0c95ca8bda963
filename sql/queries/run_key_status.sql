-- A run key's row, if any: its status and content hash.
SELECT run_id, status, content_hash FROM omni.run WHERE run_key = %(run_key)s
