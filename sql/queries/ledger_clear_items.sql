DELETE FROM omni.item_night WHERE night_id = %(night_id)s
