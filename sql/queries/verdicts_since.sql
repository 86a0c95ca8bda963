-- A key's verdicts after a night, up to and including another (oldest first).
SELECT nightly, verdict FROM omni.gate_decision
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND candidate_branch = %(candidate_branch)s
  AND baseline_branch = %(baseline_branch)s AND variant = %(variant)s
  AND policy_version = %(policy_version)s AND nightly > %(after)s AND nightly <= %(until)s
ORDER BY nightly
