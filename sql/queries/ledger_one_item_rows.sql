-- One item's rows of the ledger nights given, in no order (the caller orders them).
SELECT night_id, utt_id, broken, mode, origin, leak
FROM omni.item_night
WHERE night_id = ANY(%(night_ids)s) AND utt_id = %(utt_id)s
