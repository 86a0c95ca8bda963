-- A run whose every clip is stored: its final status and content hash.
UPDATE omni.run SET status = %(status)s, content_hash = %(content_hash)s, finished_at = now()
WHERE run_id = %(run_id)s
