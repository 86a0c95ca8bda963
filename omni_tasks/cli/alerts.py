"""Slack alerts: delivery, triage, listing."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import inspect
import sys
from typing import Annotated

import typer

from omni_tasks.alerts import keys
from omni_tasks.cli import options as opt
from omni_tasks.cli.common import alerts_app, console, fail, json_out
from omni_tasks.config import get_settings
from omni_tasks.reports.tables import print_table


@alerts_app.command("dispatch")
def alerts_dispatch(as_json: opt.JsonFlag = False) -> None:
    """Deliver queued alert messages: to Slack when OMNI_SLACK_TOKEN and OMNI_SLACK_CHANNEL are
    set, otherwise as Block Kit JSON files under $OMNI_HOME/outbox (printed readably)."""
    from omni_tasks.alerts.slack import default_sink, dispatch

    sink = default_sink()
    # With --json, stdout carries only the JSON: the local outbox's readable echo goes to stderr.
    with contextlib.redirect_stdout(sys.stderr if as_json else sys.stdout):
        report = opt.on_db(lambda conn: dispatch(conn, sink))
    if as_json:
        json_out({"sink": sink.name, **dataclasses.asdict(report)})
        return
    where = "Slack" if sink.name == "slack" else f"local outbox {get_settings().outbox_dir}"
    console.print(f"alerts → {where}: {report.summary}")


AlertArg = Annotated[int, typer.Argument(help="Alert id (see `alerts list`)")]
OfOpt = Annotated[int | None, typer.Option("--of", help="The alert that owns this regression")]
IssueOpt = Annotated[str | None, typer.Option(help="The issue's URL (https://…)")]
NoteOpt = Annotated[
    str | None, typer.Option(metavar="TEXT", help="Why (shown in Slack and on the dashboard)")
]
LinkOpt = Annotated[str | None, typer.Option(metavar="URL", help="A bug or PR URL to link")]
ByOpt = Annotated[
    str | None, typer.Option(metavar="NAME", help="Who acts (default: the login name)")
]
REQUIRED = ("of", "issue")  # an action that takes them needs them
CHOSEN = (*REQUIRED, "link")


def _triage_command(action: str, help: str, *takes: str) -> None:
    """`alerts <action>`: the alert, why, who, --json, and those of --of, --issue and --link
    that `takes` names (one function serves every action: its signature is cut to them)."""

    def command(
        alert: AlertArg,
        of: OfOpt = None,
        issue: IssueOpt = None,
        note: NoteOpt = None,
        link: LinkOpt = None,
        by: ByOpt = None,
        as_json: opt.JsonFlag = False,
    ) -> None:
        import getpass

        from omni_tasks.alerts.triage import TriageError, triage

        who = by or getpass.getuser()
        done = opt.on_db(
            lambda conn: triage(conn, alert, action, by=who, note=note, link=issue or link, of=of),
            TriageError,
        )
        if as_json:
            json_out(done)
            return
        console.print(
            f"alert #{done.alert_id} {done.status} ({done.state}); the Slack message updates at "
            "the next `alerts dispatch`",
        )

    whole = inspect.signature(command, eval_str=True)
    command.__signature__ = whole.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(default=p.empty) if p.name in REQUIRED else p
            for p in whole.parameters.values()
            if p.name not in CHOSEN or p.name in takes
        ]
    )
    alerts_app.command(action, help=help)(command)


_triage_command(
    "ack", "Acknowledge an open alert: someone owns it; nightly updates continue.", "link"
)
_triage_command(
    "invalid",
    "Mark an open alert invalid: it closes, and later nights of its key open a new alert only "
    "when the candidate runs a commit the invalid alert never covered.",
    "link",
)
_triage_command(
    "duplicate",
    "Mark an open alert a duplicate of another (the same regression seen twice): it closes, and "
    "its key stays quiet until a new commit.",
    "of",
    "link",
)
_triage_command(
    "downstream",
    "Mark an open alert downstream of another (caused by that alert's regression): it closes, "
    "and its key stays quiet until a new commit.",
    "of",
    "link",
)
_triage_command(
    "ignore",
    "Ignore an open alert (looked at, nothing to do): it closes, and its key stays quiet until "
    "a new commit.",
)
_triage_command(
    "link",
    "Link an existing issue to an open alert: it stays open, its message links the issue.",
    "issue",
)
_triage_command(
    "reopen", "Reopen an alert a person closed (invalid, duplicate, downstream or ignored).", "link"
)


@alerts_app.command("list")
def alerts_list(
    status: Annotated[str | None, typer.Option(help="open or resolved (default: both)")] = None,
    benchmark: opt.OnlyBenchmark = None,
    model: opt.OnlyModel = None,
    lane: opt.OnlyLane = None,
    branch: Annotated[
        str | None, typer.Option(metavar="BRANCH", help="Only alerts on this candidate branch")
    ] = None,
    since: Annotated[
        datetime.datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Only alerts seen on or after this night"),
    ] = None,
    wide: opt.WideFlag = False,
    as_json: opt.JsonFlag = False,
) -> None:
    """Alerts (open first), the group each belongs to, and the state of their messages,
    optionally filtered (a group is listed when one of its members matches). A group's id
    takes the same triage commands, which then act on each of its members."""
    from omni_tasks.store import alerts as alert_store

    if status not in (None, "open", "resolved"):
        fail(f"--status: {status!r} is not open or resolved")
    rows = opt.on_db(
        lambda conn: alert_store.overview(
            conn,
            state=status,
            benchmark=benchmark,
            model=model,
            lane=lane,
            branch=branch,
            since=None if since is None else since.date(),
        )
    )
    if as_json:
        json_out(rows)
        return
    headers = "id key kind group state triage opened last resolved msgs undelivered".split()
    cells = [[str(v) if v is not None else "" for v in r.values()] for r in rows]
    if not wide:  # the id is what triage commands take: the key is shortened, never the id
        at = headers.index("key")
        for cell in cells:
            cell[at] = keys.short(cell[at])
    print_table(
        console,
        headers,
        cells,
        keep="id",
        drop_first=["msgs", "resolved", "opened", "kind", "undelivered", "last", "group", "triage"],
        wide=wide,
    )
