-- A bisect endpoint's stored run: the newest complete nightly or backfill run of a series'
-- commit on the same dataset and subset, with its newest complete grading. Its clips choose
-- the discriminating set; they are never judged again.
SELECT r.run_id, r.run_key, r.nightly, r.seed, g.grading_id
FROM omni.run r
JOIN LATERAL (
    SELECT gr.grading_id FROM omni.grading gr
    WHERE gr.run_id = r.run_id AND gr.status = 'complete'
    ORDER BY gr.grading_id DESC LIMIT 1
) g ON true
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s
  AND r.variant = %(variant)s AND r.commit_sha = %(commit)s
  AND r.trigger IN ('nightly', 'backfill') AND r.status = 'complete'
  AND r.dataset_fingerprint = %(dataset_fingerprint)s
ORDER BY r.nightly DESC, r.run_id DESC
LIMIT 1
