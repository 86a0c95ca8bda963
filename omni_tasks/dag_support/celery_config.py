"""The Celery workers' configuration: Airflow's own, plus a seal in every worker process.

`airflow celery worker` is exec'd with the worker's whole environment, and its prefork pool
processes (where Airflow's supervisor runs each task) inherit that environment block. Naming
this module in `[celery] celery_config_options` (AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS=
omni_tasks.dag_support.celery_config.CELERY_CONFIG, set in docker-compose.yml and the Helm
values) seals the main process and each pool process as they start (trust/child_env.py), so
their /proc/PID/environ holds no secret and they are not dumpable. The sandbox is the guarantee;
this is the second layer.
"""

from __future__ import annotations

import importlib
from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG
from celery.signals import worker_init, worker_process_init

from omni_tasks.trust.child_env import seal

CELERY_CONFIG: dict[str, Any] = dict(DEFAULT_CELERY_CONFIG)

# `airflow celery worker` reads this module when it builds its Celery app, before it forks the
# log server and the pool: sealing here covers every process forked after (a config module
# whose whole job is this, so it acts on import).
seal()


# What our tasks import. Airflow runs each task in a process forked from a pool process, so a
# module the worker imported before its pool forked is loaded in every task at no cost: these
# imports were most of a task process's CPU (3–4 s a task, scipy.stats and the DAG file's
# operators the largest). None of them reads a setting or opens a connection on import.
PRELOAD = (
    "airflow.providers.standard.operators.trigger_dagrun",
    "omni_tasks.dag_support.tasks",
    "omni_tasks.jobs.nightly",
    "omni_tasks.jobs.decide",
    "omni_tasks.jobs.rerun",
    "omni_tasks.jobs.gate_advice",
)


@worker_init.connect
def _seal_main(**_: object) -> None:
    seal()
    for name in PRELOAD:
        importlib.import_module(name)


@worker_process_init.connect
def _seal_pool_process(**_: object) -> None:
    seal()
