"""The jobs DAG tasks call, one module each: the nightly (run, stats, gate), the bisect and its
automatic planning, re-grading, the freshness watchdog, and the statistics every one of them
stores."""
