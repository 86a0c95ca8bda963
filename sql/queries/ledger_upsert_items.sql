-- What the family knows about a series' items (their groups), as the newest night read says.
INSERT INTO omni.ledger_item (benchmark, model, lane, utt_id, groups)
SELECT %(benchmark)s, %(model)s, %(lane)s, u, g
FROM unnest(%(utt_ids)s::text[], %(groups)s::jsonb[]) AS t(u, g)
ON CONFLICT (benchmark, model, lane, utt_id) DO UPDATE SET groups = EXCLUDED.groups
WHERE omni.ledger_item.groups IS DISTINCT FROM EXCLUDED.groups
