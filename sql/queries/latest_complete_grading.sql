-- The grading statistics read: the newest complete one that graded anything (an empty one,
-- e.g. of a transcript-mode run's missing audio, never hides a real one), or the one by a
-- given grader.
SELECT grading_id, grader_id FROM omni.grading gr
WHERE run_id = %(run_id)s AND status = 'complete'
  AND (%(grader_id)s::text IS NULL OR grader_id = %(grader_id)s)
ORDER BY EXISTS (SELECT 1 FROM omni.clip_grade g WHERE g.grading_id = gr.grading_id) DESC,
         grading_id DESC
LIMIT 1
