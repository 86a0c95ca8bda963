"""seed-TTS re-grade (manual): grade a run's stored audio with another grader.

Adds a grading to the run (never a new run); compare it with the original through
`omni-tasks compare --baseline-grader/--candidate-grader`.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, params, renamed, runtime, tasks


@dag(
    dag_id="omni_regrade",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["omni", "seed-tts", "regrade"],
    params=params.regrade_params(),
    default_args={**runtime.DEFAULT_ARGS, **callbacks.ON_FAILED_TRY},
    doc_md=__doc__,
)
def omni_regrade() -> None:
    @task(
        queue="gpu", pool=runtime.GPU_POOL, pool_slots=1, execution_timeout=runtime.REGRADE_TIMEOUT
    )
    def regrade() -> dict:
        return tasks.regrade(get_current_context())

    regrade()


renamed.with_alias(omni_regrade)  # and, for one release, seed_tts_regrade
