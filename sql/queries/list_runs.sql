SELECT r.run_key, r.benchmark, r.model, r.lane, r.nightly, r.branch, r.commit_sha, r.variant, r.seed, r.trigger,
       r.status, r.n_expected, r.created_at,
       (SELECT count(*) FROM omni.clip_audio a WHERE a.run_id = r.run_id) AS n_clips,
       (SELECT count(*) FROM omni.grading g WHERE g.run_id = r.run_id) AS n_gradings
FROM omni.run r
WHERE (%(benchmark)s::text IS NULL OR r.benchmark = %(benchmark)s)
  AND (%(model)s::text IS NULL OR r.model = %(model)s)
  AND (%(lane)s::text IS NULL OR r.lane = %(lane)s)
  AND (%(branch)s::text IS NULL OR r.branch = %(branch)s)
  AND (%(nightly)s::date IS NULL OR r.nightly = %(nightly)s)
ORDER BY r.nightly DESC, r.branch, r.variant, r.run_key
LIMIT %(limit)s
