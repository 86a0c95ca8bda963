SELECT * FROM omni.clip_audio WHERE run_id = %(run_id)s ORDER BY ordinal
