UPDATE omni.event SET grafana_annotation_id = %(annotation_id)s WHERE event_id = %(event_id)s
