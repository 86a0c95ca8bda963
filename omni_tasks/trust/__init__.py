"""The trust boundary (docs/operators/security.md).

Trusted: DAG files and the deployment config (the operator's). Untrusted: trigger forms,
artifacts, datasets, servers and the commits they run, pull requests, Buildkite and GitHub
answers. Three allow-lists stand between them, two of them here:

  child_env.py  untrusted code (builds, servers) runs with an environment built from an
                allow-list, and the worker's own secrets are not readable through /proc
  redact.py     every outbound text (Slack, check runs, annotations, stored errors, logs)
                passes one redaction-and-escape gate

The third, a trigger form's schema of choices, is `deployment/forms.py` (it names the config's
offers and the families' options). The trust room sits low (settings below it, nothing else of
ours): the API server's form check is `dag_support/submit.py`, and a sink's own escape is its
sender's (Slack's mrkdwn escape is `alerts.blocks.escape`).
"""
