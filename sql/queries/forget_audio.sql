-- Retention removed a run's audio files: its clip rows stay (the unit of truth), without a URI.
UPDATE omni.clip_audio SET audio_uri = NULL WHERE run_id = %(run_id)s AND audio_uri IS NOT NULL
