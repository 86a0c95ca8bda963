-- A run key's row, if any, and its status.
SELECT run_id, status FROM omni.run WHERE run_key = %(run_key)s
