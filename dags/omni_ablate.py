"""Ablations (manual): which deploy override brings a confirmed regression back.

The confirmed night's candidate and baseline runs choose the clips (regressed plus a control
sample fine on both); at one fresh seed the baseline, the candidate and the candidate under each
ablation (one deploy override, merged by stage_id) run on those clips only. Each ablation is
judged "regression gone", "partial" or "unchanged"; the result is an event, a reply in the
alert's Slack thread and a section of the night's report. An Airflow DAG; its shape is
dag_support/one_series.py's.
"""

from __future__ import annotations

from omni_tasks.dag_support import params, tasks
from omni_tasks.dag_support.one_series import one_series_dag

one_series_dag("omni_ablate", __doc__, ["ablate"], params.ablate_params(), tasks.ablate)()
