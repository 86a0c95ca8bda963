SELECT branch || ' / ' || variant AS branch, mode, clips FROM omni.v_failure_modes
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND tau = %(tau)s
  AND time = (%(nightly)s::timestamp AT TIME ZONE 'UTC')
