-- Statistics stored for some gradings at one τ under one policy version.
SELECT grading_id, stats FROM omni.run_stats
WHERE grading_id = ANY(%(grading_ids)s) AND tau = %(tau)s AND policy_version = %(policy_version)s
