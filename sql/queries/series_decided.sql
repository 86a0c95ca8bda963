-- Whether a series has any gate decision for the night (the watchdog's "decided by 09:00").
SELECT 1 FROM omni.gate_decision
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
  AND nightly = %(nightly)s AND variant = %(variant)s
LIMIT 1
