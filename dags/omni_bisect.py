"""Bisect (manual, or by the nightly's auto-bisect): the first bad commit between a good and
a bad one, for any series whose family can be bisected (seed-TTS, Daily-Omni, Video-MME,
LibriSpeech).

The endpoints' stored nightly runs (fresh runs when none is on record) choose the
discriminating items (regressed set plus a control sample); midpoints run on them with a
sequential test per step, repeated with more seeds while undecided. Per-step evidence is
stored as events and, when an alert is open, replied in its Slack thread. An Airflow DAG;
its shape is dag_support/one_series.py's.
"""

from __future__ import annotations

from omni_tasks.dag_support import params, renamed, tasks
from omni_tasks.dag_support.one_series import one_series_dag

omni_bisect = one_series_dag(
    "omni_bisect", __doc__, ["bisect"], params.bisect_params(), tasks.bisect
)
renamed.with_alias(omni_bisect)  # and, for one release, seed_tts_bisect
