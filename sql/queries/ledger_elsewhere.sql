-- The chronic items of the benchmark's other series on the branch, each as of its newest
-- ledger night up to `until` that has states stored (one index probe a series).
SELECT o.model, o.lane, s.utt_id
FROM (
    SELECT DISTINCT model, lane FROM omni.ledger_night
    WHERE benchmark = %(benchmark)s AND branch = %(branch)s
      AND (model, lane) <> (%(model)s, %(lane)s)
) o
JOIN LATERAL (
    SELECT n.night_id FROM omni.ledger_night n
    WHERE n.benchmark = %(benchmark)s AND n.model = o.model AND n.lane = o.lane
      AND n.branch = %(branch)s AND n.nightly <= %(until)s
      AND EXISTS (SELECT 1 FROM omni.ledger_state x WHERE x.night_id = n.night_id)
    ORDER BY n.nightly DESC LIMIT 1
) l ON true
JOIN omni.ledger_state s ON s.night_id = l.night_id
WHERE s.state IN ('chronic', 'new')
