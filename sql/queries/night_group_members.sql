-- Regression alerts as groups list them, with the series of the decision that opened each:
-- the members of some groups, and the lone ones of a baseline whose nights overlap the window.
SELECT a.*, d.benchmark, d.model, d.lane, d.candidate_branch, d.baseline_branch
FROM omni.alert a
LEFT JOIN omni.gate_decision d ON d.decision_id = (a.details ->> 'decision_id')::bigint
WHERE a.group_id = ANY(%(ids)s)
   OR (a.kind = 'regression' AND a.group_id IS NULL
       AND split_part(a.alert_key, '|', 5) = %(baseline)s
       AND a.range_from < %(last)s AND %(first)s < a.range_to)
ORDER BY a.alert_id
