-- A run's synthesized clips in dataset order (what a grader hears).
SELECT utt_id, ordinal, reference_text, synth_status, audio_uri, audio_seconds, latency_s,
       thinker_text, error_detail, finish_reason
FROM omni.clip_audio WHERE run_id = %(run_id)s
ORDER BY ordinal
