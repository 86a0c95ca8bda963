"""The nightly's deployment config (docs/operators/configure.md): `reading` finds and parses
it, `schema` and `server` are a series' fields, `forms` (a trigger form's allow-list of the
config's offers), `checks`, `night` (the fleet's night and the DAG's task chains),
`one_series` (a bisect's or an ablation's form), and the config-wide sections `buildkite` and
`retention` (the `ab:` section is omni_tasks.ab.config's)."""
