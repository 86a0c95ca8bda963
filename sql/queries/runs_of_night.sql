-- A night's runs with their newest grading's grader (what reproduces each); a concurrency
-- check's runs are its own report's, and a same-morning re-run's (a few items at other seeds)
-- its decision's reasons, not the night's.
SELECT r.run_id, r.run_key, r.benchmark, r.nightly, r.branch, r.commit_sha, r.commit_time,
       r.observed_head, r.lineage, r.variant, r.config, r.config_hash, r.stack, r.execution,
       r.execution_fingerprint, r.dataset_fingerprint, r.prompt_fingerprint, r.system_prompt,
       r.seed, r.trigger, r.airflow_dag_id, r.airflow_run_id, r.status, r.n_expected,
       r.summary, r.source, r.content_hash, r.created_at, r.finished_at, r.model, r.lane,
       g.grader
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT gr.grader FROM omni.grading gr WHERE gr.run_id = r.run_id
    ORDER BY gr.grading_id DESC LIMIT 1
) g ON true
WHERE r.benchmark = %(benchmark)s AND r.model = %(model)s AND r.lane = %(lane)s AND r.nightly = %(nightly)s
  AND r.trigger NOT IN ('concurrency', 'rerun')
ORDER BY r.branch, r.variant, r.seed
