SELECT * FROM omni.run WHERE run_key = %(run_key)s
