-- Each item's counted nights among the ledger nights given.
SELECT utt_id, count(*) AS nights
FROM omni.item_night
WHERE night_id = ANY(%(night_ids)s)
GROUP BY utt_id
