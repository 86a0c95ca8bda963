-- A series' ablation results of one night (omni-tasks ablate), newest first.
SELECT details FROM omni.event
WHERE kind = 'ablation_result' AND details ->> 'series' = %(series)s
  AND details ->> 'nightly' = %(nightly)s::text
ORDER BY time DESC, event_id DESC
