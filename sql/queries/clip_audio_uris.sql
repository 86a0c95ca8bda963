-- The stored audio of some clips of one run (those that have any).
SELECT utt_id, audio_uri FROM omni.clip_audio
WHERE run_id = %(run_id)s AND utt_id = ANY(%(utt_ids)s) AND audio_uri IS NOT NULL
