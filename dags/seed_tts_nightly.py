"""The nightly: benchmark every series (model × benchmark × lane) on every branch on its lane's
GPU workers, gate each series against its own baseline, refresh dashboards, alert.

record_heads → run_branch, both per lane (mapped: series × branch × seed on that lane's queue
and pool; lanes from the deployment config when this file is parsed) → summarize → decide (per
series: paired comparisons, gate, alert plan) → plan_bisects → auto_bisect (triggers
seed_tts_bisect once per confirmed regression) → dispatch_alerts, which runs whatever failed
and never waits on advice, report or dashboard work: advise_gates (each upstream gate's
behaviour on a bounded window of history) → refresh (HTML reports, Grafana) run beside it,
and dispatch_late delivers what refresh's failure raised. Everything after the GPU tasks runs
whatever they did: a failed series task holds back no other series. `watcher` then fails the
DAG run when any task failed (otherwise the always-run leaves would mark a failed night
successful); its own failure raises no second message.
Every task is idempotent, so retries and re-runs converge. Backfill:
`airflow backfill create --dag-id seed_tts_nightly --from-date 2026-11-01 --to-date 2026-11-07`.
"""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import dag, get_current_context, task

from omni_tasks.dag_support import callbacks, params, runtime, tasks


@dag(
    dag_id="seed_tts_nightly",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["omni", "seed-tts", "nightly"],
    params=params.nightly_params(),
    default_args={**runtime.DEFAULT_ARGS, "on_failure_callback": callbacks.on_task_failure},
    doc_md=__doc__,
)
def seed_tts_nightly() -> None:
    lanes = runtime.lanes()

    @task
    def record_heads(lane: str) -> list[dict]:
        return tasks.record_heads(get_current_context(), lane, list(lanes))

    @task(map_index_template="{{ branch_label }}")
    def run_branch(plan: dict) -> str:
        return tasks.run_branch(get_current_context(), plan)

    @task(trigger_rule="all_done")
    def summarize() -> list[str]:
        return tasks.summarize(get_current_context())

    @task(trigger_rule="all_done")
    def decide() -> str:
        return tasks.decide(get_current_context())

    @task
    def advise_gates(night: str) -> str:
        return tasks.advise_gates(get_current_context(), night)

    @task
    def refresh(night: str) -> dict:
        return tasks.refresh(get_current_context(), night)

    @task
    def plan_bisects(night: str) -> list[dict]:
        return tasks.plan_bisects(get_current_context(), night)

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return tasks.dispatch_alerts(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_late() -> str:
        return tasks.dispatch_alerts(get_current_context())

    @task(trigger_rule="one_failed", retries=0, on_failure_callback=None)
    def watcher() -> None:
        callbacks.fail_the_run()

    heads, runs = [], []
    for name, lane in lanes.items():  # one heads task and one mapped GPU task per lane
        heads.append(
            record_heads.override(task_id=runtime.lane_task_id("record_heads", name))(name)
        )
        runs.append(
            run_branch.override(
                task_id=runtime.lane_task_id("run_branch", name),
                queue=lane.queue,
                pool=lane.pool,
                pool_slots=lane.gpus_per_server,
                execution_timeout=lane.execution_timeout,
            ).expand(plan=heads[-1])
        )
    stats = summarize()
    runs >> stats
    night = decide()
    stats >> night  # the gate reads the statistics summarize stored
    done = refresh(advise_gates(night))  # advice reads what decide stored; alerts never wait
    planned = plan_bisects(night)
    # Each planned trigger names its DAG: seed_tts_bisect, or omni_ablate's two-repository A/B
    # when both repositories changed.
    bisects = TriggerDagRunOperator.partial(
        task_id="auto_bisect", skip_when_already_exists=True
    ).expand_kwargs(planned)
    alerts = dispatch_alerts()
    bisects >> alerts
    late = dispatch_late()
    done >> late
    [*heads, *runs, stats, night, done, planned, bisects, alerts, late] >> watcher()


seed_tts_nightly()
