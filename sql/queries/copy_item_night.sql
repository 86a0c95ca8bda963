COPY omni.item_night (night_id, utt_id, broken, mode, origin, leak) FROM STDIN
