"""Every triage command's --help names its options and says what each is for (the commands are
built by one factory in cli/alerts.py: a wiring slip would drop or swap one)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from omni_tasks.cli import app

WHY = "Why (shown in Slack and on the dashboard)"
LINK = "A bug or PR URL to link"
BY = "Who acts (default: the login name)"
OF = "The alert that owns this regression"
ISSUE = "The issue's URL"


@pytest.mark.parametrize(
    ("command", "says", "options"),
    [
        ("ack", "Acknowledge an open alert", {"--note": WHY, "--link": LINK, "--by": BY}),
        ("invalid", "Mark an open alert invalid", {"--note": WHY, "--link": LINK, "--by": BY}),
        ("duplicate", "a duplicate of another", {"--of": OF, "--note": WHY, "--link": LINK}),
        ("downstream", "downstream of another", {"--of": OF, "--note": WHY, "--link": LINK}),
        ("reopen", "Reopen an alert a person closed", {"--note": WHY, "--link": LINK, "--by": BY}),
        ("ignore", "Ignore an open alert", {"--note": WHY, "--by": BY}),
        ("link", "Link an existing issue", {"--issue": ISSUE, "--note": WHY, "--by": BY}),
    ],
)
def test_triage_help_keeps_every_option(command: str, says: str, options: dict[str, str]) -> None:
    out = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["alerts", command, "--help"])
    assert out.exit_code == 0, out.output
    assert says in out.output
    lines = out.output.splitlines()
    for option, text in {**options, "--json": "Machine-readable output"}.items():
        assert any(option in line and text in line for line in lines), (option, out.output)
    for chosen in ("--of", "--issue", "--link"):
        assert (chosen in out.output) == (chosen in options), (chosen, out.output)
