SELECT event_id, time, kind, text, tags FROM omni.event
WHERE grafana_annotation_id IS NULL ORDER BY time
