SELECT gr.grading_id, gr.grader_id, gr.grader, gr.status, gr.created_at,
       (SELECT count(*) FROM omni.clip_grade g WHERE g.grading_id = gr.grading_id) AS n_grades
FROM omni.grading gr WHERE gr.run_id = %(run_id)s ORDER BY gr.grading_id
