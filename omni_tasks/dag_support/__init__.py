"""What the DAG files import, by concern: `params` (trigger forms), `runtime` (default args,
timeouts, pools, the DB, deadlines), `tasks` (one function per task), `callbacks` (failure
handling), `one_series` (every DAG's `@dag`, the bisect and ablate DAGs' shape), `renamed`
(the renamed DAGs' old ids, kept as aliases for one release), `submit` (the API server's check
of a trigger form, the first task's own check run when the form is posted)."""
