SELECT synth_status, count(*) AS n FROM omni.clip_audio WHERE run_id = %(run_id)s
GROUP BY synth_status ORDER BY synth_status
