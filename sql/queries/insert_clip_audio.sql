-- One synthesized clip, stored as it completes (a re-run that resumes skips stored clips).
INSERT INTO omni.clip_audio (run_id, utt_id, ordinal, reference_text, synth_status, audio_uri,
                             audio_seconds, latency_s, thinker_text, error_detail,
                             finish_reason)
VALUES (%(run_id)s, %(utt_id)s, %(ordinal)s, %(reference_text)s, %(synth_status)s,
        %(audio_uri)s, %(audio_seconds)s, %(latency_s)s, %(thinker_text)s, %(error_detail)s,
        %(finish_reason)s)
ON CONFLICT (run_id, utt_id) DO NOTHING
