-- A night's decisions with their paired tables and each one's history evidence (φ with it).
SELECT h.*, d.history
FROM omni.v_gate_history h
JOIN omni.gate_decision d USING (decision_id)
WHERE h.benchmark = %(benchmark)s AND h.model = %(model)s AND h.lane = %(lane)s
  AND h.nightly = %(nightly)s
ORDER BY h.candidate_branch, h.variant
