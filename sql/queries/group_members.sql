-- A group's members, oldest first, with their nights and the decision that opened each.
SELECT a.*, d.benchmark, d.model, d.lane, d.candidate_branch, d.baseline_branch, d.variant
FROM omni.alert a
LEFT JOIN omni.gate_decision d ON d.decision_id = (a.details ->> 'decision_id')::bigint
WHERE a.group_id = %(group_id)s
ORDER BY a.alert_id
