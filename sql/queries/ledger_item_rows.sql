-- The item rows of the ledger nights given, of the items broken on at least one of them, in no
-- order: the caller puts them in night order. An item never broken in the window is clean
-- whatever its rows say (ledger_item_counts.sql counts its nights).
SELECT i.night_id, i.utt_id, i.broken, i.mode, i.origin, i.leak
FROM omni.item_night i
WHERE i.night_id = ANY(%(night_ids)s)
  AND i.utt_id IN (SELECT b.utt_id FROM omni.item_night b
                   WHERE b.night_id = ANY(%(night_ids)s) AND b.broken)
