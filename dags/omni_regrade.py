"""seed-TTS re-grade (manual): grade a run's stored audio with another grader.

Adds a grading to the run (never a new run); compare it with the original through
`omni-tasks compare --baseline-grader/--candidate-grader`.
"""

from __future__ import annotations

from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import params, renamed, runtime, tasks
from omni_tasks.dag_support.one_series import omni_dag


@omni_dag(
    "omni_regrade",
    schedule=None,
    tags=["seed-tts", "regrade"],
    doc=__doc__,
    params=params.regrade_params(),
)
def omni_regrade() -> None:
    @task(
        queue="gpu", pool=runtime.GPU_POOL, pool_slots=1, execution_timeout=runtime.REGRADE_TIMEOUT
    )
    def regrade() -> dict:
        return tasks.regrade(get_current_context())

    regrade()


renamed.with_alias(omni_regrade)  # and, for one release, seed_tts_regrade
