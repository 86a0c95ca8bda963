"""The nightly's deployment config: what a scheduled run benchmarks, where, and how long it may
take. A versioned YAML (docs/operators/configure.md): version 1 is one series (the trigger
form's fields plus `version` and `form_choices`); version 2 a fleet of `lanes`, `defaults` and
`series`, with config-wide sections (`ab`, `buildkite`, `retention`, `slack_actions`).

`reading` finds and parses it (a version 1 config becomes its one-series version 2 document),
`schema` and `server` are a series' fields, `checks` the checks that name a field, `night` the
fleet's night and the DAG's task chains, `one_series` a bisect's or an ablation's form, and
`buildkite`, `retention`, `actions` the config-wide sections (the `ab:` section is
omni_tasks.ab.config's)."""
