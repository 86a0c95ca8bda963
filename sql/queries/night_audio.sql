-- Stored audio of some items of some runs (the top regressed items of replayed nights).
SELECT run_id, utt_id, audio_uri FROM omni.clip_audio
WHERE run_id = ANY(%(run_ids)s) AND utt_id = ANY(%(utt_ids)s) AND audio_uri IS NOT NULL
