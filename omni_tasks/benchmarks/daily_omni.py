"""Daily-Omni (audio-visual QA, 1,197 questions; vLLM-Omni `daily_omni_eval`). Its items carry
no question id: a question is its video and its task type."""

from omni_tasks.benchmarks.multiple_choice import MultipleChoice

DAILY_OMNI = MultipleChoice(
    id="daily_omni",
    prefix="daily_omni",
    breakdown_fields={
        "task": "task_type",
        "category": "video_category",
        "duration": "video_duration",
    },
    key_fields=("video_id", "task_type"),
    description="Daily-Omni audio-visual multiple choice: accuracy, per task, category, duration",
)
