-- One run and everything that hangs off it (clips, gradings, statistics, comparisons); gate
-- decisions keep their verdicts with the run's link cleared.
DELETE FROM omni.run WHERE run_key = %(run_key)s RETURNING run_id
