SELECT stats FROM omni.run_stats
WHERE grading_id = %(grading_id)s AND tau = %(tau)s AND policy_version = %(policy_version)s
