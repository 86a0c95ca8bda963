"""The nightly's deployment config (docs/operators/configure.md): `reading` finds and parses
it, `schema` and `server` are a series' fields, `night` (the fleet's night, its checks and the
DAG's task chains), `one_series` (a bisect's or an ablation's form), and the config-wide
`sections` (the `ab:` section is omni_tasks.ab.config's)."""
