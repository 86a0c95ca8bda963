COPY omni.clip_audio (run_id, utt_id, ordinal, reference_text, synth_status, audio_uri,
                      audio_seconds, latency_s, thinker_text, error_detail, finish_reason)
FROM STDIN
