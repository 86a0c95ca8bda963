-- A benchmark's open regression alerts with the decision that opened each.
SELECT a.alert_id, a.alert_key, a.opened_nightly, a.details,
       d.benchmark, d.model, d.lane, d.candidate_branch, d.baseline_branch, d.variant,
       d.policy_version
FROM omni.alert a
JOIN omni.gate_decision d ON d.decision_id = (a.details ->> 'decision_id')::bigint
WHERE a.kind = 'regression' AND a.state = 'open' AND d.benchmark = %(benchmark)s AND d.model = %(model)s AND d.lane = %(lane)s
ORDER BY a.alert_id
