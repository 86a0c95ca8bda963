-- A night's confirmation, recomputed along its key's series.
UPDATE omni.gate_decision SET confirmed = %(confirmed)s WHERE decision_id = %(decision_id)s
