SELECT utt_id, groups FROM omni.ledger_item
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
