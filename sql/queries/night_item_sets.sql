-- The stored item sets of a window's baseline gradings (night_baseline_items.sql stores them).
SELECT grading_id, observed, broken
FROM omni.item_set
WHERE grading_id = ANY(%(grading_ids)s) AND tau = %(tau)s
