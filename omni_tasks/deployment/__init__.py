"""The nightly's deployment config (docs/operators/configure.md): `reading` finds and parses
it, `schema` is a series' fields (with `ServerConfig` and every server default), `forms` (a
trigger form's allow-list), `night` (the fleet's night, its checks and the DAG's task chains),
`one_series` (a bisect's or an ablation's form), and the config-wide `sections` (the `ab:`
section is omni_tasks.ab.config's)."""
