DELETE FROM omni.ledger_state WHERE night_id = %(night_id)s
