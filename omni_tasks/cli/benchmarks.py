"""The benchmarks tracked."""

from __future__ import annotations

import dataclasses

from rich.table import Table

from omni_tasks.cli.common import JsonFlag, benchmarks_app, console, json_out


# ---------------------------------------------------------------- benchmarks
@benchmarks_app.command("list")
def benchmarks_list(as_json: JsonFlag = False) -> None:
    """Each benchmark: its id, family, per-item metric, what makes an item broken, and the
    labels its items are broken down by."""
    from omni_tasks import benchmarks

    rows = [b.describe() for b in benchmarks.all_benchmarks()]
    if as_json:
        json_out([dataclasses.asdict(r) for r in rows])
        return
    table = Table()
    table.add_column("id", no_wrap=True)  # what every command takes: never cut
    for name in ("family", "metric", "broken when", "breakdowns", "can"):
        table.add_column(name, overflow="fold")
    for r in rows:
        broken = "WER > tau" if r.judged == "wer" else "answer wrong"
        can = ", ".join((["run"] if r.runnable else []) + r.capabilities) or "import only"
        table.add_row(r.id, r.family, r.metric, broken, ", ".join(r.breakdowns), can)
    console.print(table)
