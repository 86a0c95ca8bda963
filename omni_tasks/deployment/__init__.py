"""The nightly's deployment config (docs/operators/configure.md): `reading` finds and parses
it, `schema` and `server` are a series' fields, `forms` (a trigger form's allow-list),
`checks`, `night` (the fleet's night and the DAG's task chains), `one_series` (a bisect's or
an ablation's form), the sections `buildkite` and `retention` (`ab:` is omni_tasks.ab.config's)."""
