SELECT * FROM omni.v_gate_history
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND nightly = %(nightly)s
ORDER BY candidate_branch, variant
