DELETE FROM omni.run WHERE run_id = %(run_id)s
