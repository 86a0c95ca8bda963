-- The item rows of the ledger nights given (an item's, when utt_id is given), by item then
-- night.
SELECT i.utt_id, n.nightly, n.commit_sha, i.broken, i.mode, i.origin, i.leak
FROM omni.item_night i
JOIN omni.ledger_night n ON n.night_id = i.night_id
WHERE i.night_id = ANY(%(night_ids)s)
  AND (%(utt_id)s::text IS NULL OR i.utt_id = %(utt_id)s::text)
ORDER BY i.utt_id, n.nightly
