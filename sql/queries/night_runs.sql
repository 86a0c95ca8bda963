-- Runs by id as the night reads them: the row, the newest grading's grader (what reproduces
-- it) and the grading the statistics read (latest_complete_grading.sql's rule).
SELECT r.run_id, r.run_key, r.benchmark, r.nightly, r.branch, r.commit_sha, r.commit_time,
       r.observed_head, r.lineage, r.variant, r.config, r.config_hash, r.stack, r.execution,
       r.execution_fingerprint, r.dataset_fingerprint, r.prompt_fingerprint, r.system_prompt,
       r.seed, r.trigger, r.airflow_dag_id, r.airflow_run_id, r.status, r.n_expected,
       r.summary, r.source, r.content_hash, r.created_at, r.finished_at, r.model, r.lane,
       newest.grader, graded.grading_id AS read_grading_id, graded.grader_id AS read_grader_id
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT gr.grader FROM omni.grading gr WHERE gr.run_id = r.run_id
    ORDER BY gr.grading_id DESC LIMIT 1
) newest ON true
LEFT JOIN LATERAL (
    SELECT grading_id, grader_id FROM omni.grading gr
    WHERE gr.run_id = r.run_id AND gr.status = 'complete'
    ORDER BY EXISTS (SELECT 1 FROM omni.clip_grade g WHERE g.grading_id = gr.grading_id) DESC,
             grading_id DESC
    LIMIT 1
) graded ON true
WHERE r.run_id = ANY(%(run_ids)s) AND r.trigger <> 'concurrency'
