UPDATE omni.run SET prompt_fingerprint = %(fingerprint)s WHERE run_id = %(run_id)s
