-- A ledger night's non-clean item states (the Grafana panels read chronic ones through
-- v_ledger_chronic).
INSERT INTO omni.ledger_state (night_id, utt_id, state, mode)
SELECT %(night_id)s, u, s, m
FROM unnest(%(utt_ids)s::text[], %(states)s::text[], %(modes)s::text[]) AS t(u, s, m)
