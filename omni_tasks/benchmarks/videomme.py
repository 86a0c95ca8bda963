"""Video-MME (video QA; vLLM-Omni `videomme_eval`, from 0.30): a question is its
`question_id`."""

from omni_tasks.benchmarks.multiple_choice import MultipleChoice

VIDEOMME = MultipleChoice(
    id="videomme",
    prefix="videomme",
    breakdown_fields={
        "task": "task",
        "domain": "domain",
        "sub_category": "sub_category",
        "duration": "duration",
    },
    key_fields=("question_id",),
    description="Video-MME multiple choice: accuracy, per task, domain, sub-category, duration",
)
