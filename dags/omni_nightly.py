"""The nightly: benchmark every series (model × benchmark × lane) on every branch on its lane's
GPU workers, gate each series against its own baseline, refresh dashboards, alert.

Per series (its chain; series from the deployment config when this file is parsed):
record_heads → run_branch (mapped over branch × seed on its lane's queue and pool) →
summarize → decide (paired comparisons, gate, alert plan) → rerun (a REGRESSED, unconfirmed
night's discordant items again on both branches at fresh seeds, on its lane's queue; the
night decided again) → deliver (its alerts go out, held
ones when its own triage hold ends: a sensor rescheduled every half minute); a
series whose config sets `concurrency: [1, 8]` also gets check_concurrency after its runs (the
same items alone and co-batched, jobs/concurrency.py), off its alert's path. A
chain waits on its own GPU tasks and their retries only: one series whose server never comes
up delays no other series' decision or alert. After every chain: plan_bisects → auto_bisect
(triggers omni_bisect once per confirmed regression) → dispatch_alerts; advise_gates (each
upstream gate on a bounded window of history) → refresh (HTML reports, Grafana) →
dispatch_late, which delivers what refresh's failure raised and waits out any post still
held. `watcher` then fails the
DAG run when any task failed (otherwise the always-run leaves would mark a failed night
successful); its own failure raises no second message.
Every task is idempotent, so retries and re-runs converge. Backfill:
`airflow backfill create --dag-id omni_nightly --from-date 2026-11-01 --to-date 2026-11-07`.
"""

from __future__ import annotations

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import get_current_context, task

from omni_tasks.dag_support import callbacks, params, renamed, runtime, tasks
from omni_tasks.dag_support.one_series import omni_dag
from omni_tasks.deployment.night import dag_units


@omni_dag(
    "omni_nightly",
    schedule="0 2 * * *",
    tags=["nightly"],
    doc=__doc__,
    max_active_runs=1,
    params=params.nightly_params(),
)
def omni_nightly() -> None:
    units = dag_units()  # the series the nightly has task chains for, read when parsed

    @task
    def record_heads(unit: str | None) -> list[dict]:
        return tasks.record_heads(get_current_context(), unit, [u.key for u in units])

    @task(map_index_template="{{ branch_label }}")
    def run_branch(plan: dict) -> str:
        return tasks.run_branch(get_current_context(), plan)

    @task(trigger_rule="all_done")
    def check_concurrency(unit: str | None) -> list[str]:
        return tasks.check_concurrency(get_current_context(), unit)

    @task(trigger_rule="all_done")
    def summarize(unit: str | None) -> list[str]:
        return tasks.summarize(get_current_context(), unit)

    @task(trigger_rule="all_done")
    def decide(unit: str | None) -> str:
        return tasks.decide(get_current_context(), unit)

    @task(trigger_rule="all_done")
    def rerun(unit: str | None) -> list[str]:
        return tasks.rerun(get_current_context(), unit)

    @task.sensor(
        trigger_rule="all_done",
        mode="reschedule",  # no worker slot held while the hold runs
        poke_interval=runtime.HOLD_POKE_S,
        timeout=runtime.LONG_TASK_TIMEOUT.total_seconds(),
    )
    def deliver(unit: str | None) -> bool:
        return tasks.deliver(get_current_context(), unit)

    @task(trigger_rule="all_done")
    def advise_gates() -> None:
        tasks.advise_gates(get_current_context())

    @task(trigger_rule="all_done")
    def refresh() -> dict:
        return tasks.refresh(get_current_context())

    @task(trigger_rule="all_done")
    def plan_bisects() -> list[dict]:
        return tasks.plan_bisects(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_alerts() -> str:
        return tasks.dispatch_alerts(get_current_context())

    @task(trigger_rule="all_done")
    def dispatch_late() -> str:
        return tasks.dispatch_alerts(get_current_context(), last=True)

    @task(trigger_rule="one_failed", retries=0, on_failure_callback=None)
    def watcher() -> None:
        callbacks.fail_the_run()

    # One chain per series, as the docstring says: it waits on its own GPU tasks only.
    chains, decided = [], []
    for u in units:
        heads = record_heads.override(task_id=u.task_id("record_heads"))(u.key)
        runs = run_branch.override(**u.on_gpu("run_branch")).expand(plan=heads)
        stats = summarize.override(task_id=u.task_id("summarize"))(u.key)
        night = decide.override(task_id=u.task_id("decide"))(u.key)
        # A REGRESSED, unconfirmed night's same-morning re-run, on its lane's GPUs: it decides
        # the night again, so what it confirms is delivered with the rest.
        again = rerun.override(**u.on_gpu("rerun"))(u.key)
        sent = deliver.override(task_id=u.task_id("deliver"))(u.key)
        runs >> stats >> night >> again >> sent  # the gate reads the statistics summarize stored
        chains += [heads, runs, stats, night, again, sent]
        if u.concurrency:  # after its runs, on its lane, off its alert's path
            checked = check_concurrency.override(**u.on_gpu("check_concurrency"))(u.key)
            runs >> checked
            chains.append(checked)
        decided.append(again)
    # After every series has decided: gate advice → reports (never on an alert's path), and
    # the auto-bisects of the night's confirmed regressions.
    done = refresh()
    decided >> advise_gates() >> done
    planned = plan_bisects()
    decided >> planned
    # Each planned trigger names its DAG: omni_bisect, or omni_ablate's two-repository A/B
    # when both repositories changed.
    bisects = TriggerDagRunOperator.partial(
        task_id="auto_bisect", skip_when_already_exists=True
    ).expand_kwargs(planned)
    alerts = dispatch_alerts()
    bisects >> alerts
    late = dispatch_late()
    done >> late
    [*chains, done, planned, bisects, alerts, late] >> watcher()


renamed.with_alias(omni_nightly)  # and, for one release, seed_tts_nightly
